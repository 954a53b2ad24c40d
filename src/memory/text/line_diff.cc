#include "kope/memory/text/line_diff.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace kope::memory {
namespace {

// Lines keep their '\n', so that a last line without one differs from the same line with one.
std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  lines.reserve(text.size() / 32 + 1);  // a guess: kernels' lines are about 30 to 50 bytes
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

enum class OpType : char { kEqual = ' ', kDelete = '-', kInsert = '+' };

struct Op {
  OpType type;
  int line;  // index into old lines (equal, delete) or new lines (insert)
};

// Lines of one side of the differing middle, with their hashes for quick inequality.
struct Side {
  const std::string_view* lines;
  std::vector<size_t> hashes;
  int size() const { return static_cast<int>(hashes.size()); }
  bool Same(int i, const Side& o, int j) const {
    return hashes[i] == o.hashes[j] && lines[i] == o.lines[j];
  }
};

Side MakeSide(const std::vector<std::string_view>& lines, int begin, int end) {
  Side side{lines.data() + begin, {}};
  side.hashes.reserve(static_cast<size_t>(end - begin));
  for (int i = begin; i < end; ++i) side.hashes.push_back(std::hash<std::string_view>()(lines[i]));
  return side;
}

// Myers' greedy forward search over a[0,n) and b[0,m), then a backtrack through the saved
// frontiers. Returns false when the distance exceeds max_d.
bool MyersScript(const Side& a, const Side& b, int a0, int b0, int max_d, std::vector<Op>* ops) {
  const int n = a.size();
  const int m = b.size();
  const int max = n + m;
  const int offset = max + 1;
  std::vector<int> v(2 * max + 3, 0);
  // The frontiers, one after the other: round d's, v[-d-1 .. d+1] at its start, begins at
  // (d + 1) * (d + 1) - 1 (rounds 0 .. d-1 took 3 + 5 + ... + (2d + 1) entries).
  std::vector<int> trace;
  int found_d = -1;
  for (int d = 0; d <= max && d <= max_d; ++d) {
    trace.insert(trace.end(), v.begin() + offset - d - 1, v.begin() + offset + d + 2);
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                  ? v[offset + k + 1]
                  : v[offset + k - 1] + 1;
      int y = x - k;
      while (x < n && y < m && a.Same(x, b, y)) ++x, ++y;
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
    if (found_d >= 0) break;
  }
  if (found_d < 0) return false;

  std::vector<Op> reversed;
  reversed.reserve(static_cast<size_t>(std::max(n, m) + found_d));
  int x = n, y = m;
  for (int d = found_d; d >= 0; --d) {
    const int* w = trace.data() + ((d + 1) * (d + 1) - 1);
    auto at = [&](int k) { return w[k + d + 1]; };
    int k = x - y;
    int prev_k = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    int prev_x = at(prev_k);
    int prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      reversed.push_back({OpType::kEqual, a0 + x - 1});
      --x, --y;
    }
    if (d > 0) {
      if (x == prev_x) {
        reversed.push_back({OpType::kInsert, b0 + prev_y});
      } else {
        reversed.push_back({OpType::kDelete, a0 + prev_x});
      }
    }
    x = prev_x, y = prev_y;
  }
  ops->insert(ops->end(), reversed.rbegin(), reversed.rend());
  return true;
}

std::vector<Op> EditScript(const std::vector<std::string_view>& a,
                           const std::vector<std::string_view>& b, int max_d) {
  const int n = static_cast<int>(a.size());
  const int m = static_cast<int>(b.size());
  int head = 0;
  while (head < n && head < m && a[head] == b[head]) ++head;
  int tail = 0;
  while (tail < n - head && tail < m - head && a[n - 1 - tail] == b[m - 1 - tail]) ++tail;

  std::vector<Op> ops;
  ops.reserve(static_cast<size_t>(n + m));
  for (int i = 0; i < head; ++i) ops.push_back({OpType::kEqual, i});
  const Side mid_a = MakeSide(a, head, n - tail);
  const Side mid_b = MakeSide(b, head, m - tail);
  if (!MyersScript(mid_a, mid_b, head, head, max_d, &ops)) {
    for (int i = head; i < n - tail; ++i) ops.push_back({OpType::kDelete, i});
    for (int j = head; j < m - tail; ++j) ops.push_back({OpType::kInsert, j});
  }
  for (int i = n - tail; i < n; ++i) ops.push_back({OpType::kEqual, i});
  return ops;
}

std::string RangeText(int start, int count) {
  // diff(1): a range of one line is printed without its count; an empty range names the line
  // before it.
  int first = count == 0 ? start : start + 1;
  if (count == 1) return std::to_string(first);
  return std::to_string(first) + "," + std::to_string(count);
}

void AppendLine(char prefix, std::string_view line, std::string* out) {
  out->push_back(prefix);
  out->append(line);
  if (line.empty() || line.back() != '\n') out->append("\n\\ No newline at end of file\n");
}

}  // namespace

std::string UnifiedDiff(std::string_view old_text, std::string_view new_text,
                        const DiffOptions& options) {
  if (old_text == new_text) return "";
  std::vector<std::string_view> a = SplitLines(old_text);
  std::vector<std::string_view> b = SplitLines(new_text);
  std::vector<Op> ops = EditScript(a, b, std::max(0, options.max_edit_distance));
  const int count = static_cast<int>(ops.size());
  const int context = std::max(0, options.context);

  // Position in each file before op i.
  std::vector<int> apos(count + 1, 0), bpos(count + 1, 0);
  for (int i = 0; i < count; ++i) {
    apos[i + 1] = apos[i] + (ops[i].type != OpType::kInsert ? 1 : 0);
    bpos[i + 1] = bpos[i] + (ops[i].type != OpType::kDelete ? 1 : 0);
  }

  std::string out;
  out.reserve(256);
  out.append("--- a/").append(options.old_name).append("\n");
  out.append("+++ b/").append(options.new_name).append("\n");
  int i = 0;
  while (i < count) {
    while (i < count && ops[i].type == OpType::kEqual) ++i;
    if (i == count) break;
    int lo = std::max(0, i - context);
    int last_change = i;
    int j = i + 1;
    while (j < count) {
      if (ops[j].type != OpType::kEqual) {
        last_change = j++;
        continue;
      }
      if (j - last_change > 2 * context) break;
      ++j;
    }
    int hi = std::min(count, last_change + 1 + context);
    out += "@@ -" + RangeText(apos[lo], apos[hi] - apos[lo]) + " +" +
           RangeText(bpos[lo], bpos[hi] - bpos[lo]) + " @@\n";
    for (int k = lo; k < hi; ++k) {
      const std::string_view line =
          ops[k].type == OpType::kInsert ? b[ops[k].line] : a[ops[k].line];
      AppendLine(static_cast<char>(ops[k].type), line, &out);
    }
    i = hi;
  }
  return out;
}

std::string AddedLines(std::string_view unified_diff) {
  std::string out;
  bool in_hunk = false;
  size_t start = 0;
  while (start < unified_diff.size()) {
    size_t end = unified_diff.find('\n', start);
    if (end == std::string_view::npos) end = unified_diff.size();
    std::string_view line = unified_diff.substr(start, end - start);
    if (line.rfind("@@", 0) == 0) {
      in_hunk = true;
    } else if (in_hunk && !line.empty() && line[0] == '+') {
      out.append(line.substr(1));
      out.push_back('\n');
    }
    start = end + 1;
  }
  return out;
}

}  // namespace kope::memory
