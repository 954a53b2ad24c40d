#include "kope/agent/tunables.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace kope::agent {
namespace {

constexpr std::string_view kMarker = "kope:tune";
constexpr size_t kMaxValues = 32;
constexpr size_t kMaxTunables = 16;

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsValueChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
         c == '-';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::optional<long long> AsInteger(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (text.front() == '+') text.remove_prefix(1);
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> AsNumber(std::string_view text) {
  if (auto i = AsInteger(text)) return static_cast<double>(*i);
  if (text.empty()) return std::nullopt;
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Splits the annotation's value list.
std::vector<std::string> SplitValues(std::string_view list) {
  std::vector<std::string> out;
  std::string current;
  for (char c : list) {
    if (IsSpace(c) || c == ',') {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

struct Declaration {
  std::string name;
  size_t value_begin = 0;  // offsets within the code part of the line
  size_t value_end = 0;
};

// `#define NAME VALUE`.
std::optional<Declaration> ParseDefine(std::string_view code) {
  size_t i = 0;
  while (i < code.size() && IsSpace(code[i])) ++i;
  if (i >= code.size() || code[i] != '#') return std::nullopt;
  ++i;
  while (i < code.size() && IsSpace(code[i])) ++i;
  if (code.substr(i, 6) != "define") return std::nullopt;
  i += 6;
  if (i >= code.size() || !IsSpace(code[i])) return std::nullopt;
  while (i < code.size() && IsSpace(code[i])) ++i;
  if (i >= code.size() || !IsIdentStart(code[i])) return std::nullopt;
  Declaration d;
  size_t name_begin = i;
  while (i < code.size() && IsIdentChar(code[i])) ++i;
  d.name = std::string(code.substr(name_begin, i - name_begin));
  if (i >= code.size() || !IsSpace(code[i])) return std::nullopt;  // a macro with parameters
  while (i < code.size() && IsSpace(code[i])) ++i;
  d.value_begin = i;
  while (i < code.size() && IsValueChar(code[i])) ++i;
  d.value_end = i;
  if (d.value_end == d.value_begin) return std::nullopt;
  while (i < code.size() && IsSpace(code[i])) ++i;
  if (i != code.size()) return std::nullopt;
  return d;
}

// `... const[expr] TYPE NAME = VALUE;`
std::optional<Declaration> ParseConstant(std::string_view code) {
  std::string_view trimmed = TrimRight(code);
  if (trimmed.empty() || trimmed.back() != ';') return std::nullopt;
  size_t eq = trimmed.rfind('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  // The value: between '=' and ';'.
  size_t vb = eq + 1;
  while (vb < trimmed.size() && IsSpace(trimmed[vb])) ++vb;
  size_t ve = vb;
  while (ve < trimmed.size() && IsValueChar(trimmed[ve])) ++ve;
  if (ve == vb) return std::nullopt;
  size_t rest = ve;
  while (rest < trimmed.size() && IsSpace(trimmed[rest])) ++rest;
  if (rest != trimmed.size() - 1) return std::nullopt;
  // The name: the identifier before '='.
  size_t ne = eq;
  while (ne > 0 && IsSpace(trimmed[ne - 1])) --ne;
  size_t nb = ne;
  while (nb > 0 && IsIdentChar(trimmed[nb - 1])) --nb;
  if (nb == ne || !IsIdentStart(trimmed[nb])) return std::nullopt;
  std::string_view before = trimmed.substr(0, nb);
  // Whole-word `const` or `constexpr` among the specifiers.
  bool constant = false;
  for (size_t i = 0; i + 5 <= before.size(); ++i) {
    if (before.substr(i, 5) != "const") continue;
    if (i > 0 && IsIdentChar(before[i - 1])) continue;
    size_t end = i + 5;
    if (before.substr(i, 9) == "constexpr") end = i + 9;
    if (end < before.size() && IsIdentChar(before[end])) continue;
    constant = true;
  }
  if (!constant) return std::nullopt;
  Declaration d;
  d.name = std::string(trimmed.substr(nb, ne - nb));
  d.value_begin = vb;
  d.value_end = ve;
  return d;
}

// Adds `value` to `values` where the header comment says.
void InsertCurrent(const std::string& value, std::vector<std::string>* values) {
  std::optional<long long> v = AsInteger(value);
  bool integers = v.has_value();
  std::vector<long long> numbers;
  for (const std::string& s : *values) {
    std::optional<long long> n = AsInteger(s);
    if (!n) integers = false;
    if (n) numbers.push_back(*n);
  }
  if (integers && !numbers.empty()) {
    bool ascending = std::is_sorted(numbers.begin(), numbers.end());
    bool descending = std::is_sorted(numbers.rbegin(), numbers.rend());
    if (ascending || descending) {
      size_t pos = 0;
      while (pos < numbers.size() && (ascending ? numbers[pos] < *v : numbers[pos] > *v)) ++pos;
      values->insert(values->begin() + static_cast<std::ptrdiff_t>(pos), value);
      return;
    }
  }
  values->insert(values->begin(), value);
}

}  // namespace

bool MentionsTunables(std::string_view source) {
  return source.find(kMarker) != std::string_view::npos;
}

TunableScan FindTunables(std::string_view source) {
  TunableScan scan;
  std::set<std::string, std::less<>> names;
  size_t line_begin = 0;
  int line_no = 0;
  while (line_begin <= source.size()) {
    size_t line_end = source.find('\n', line_begin);
    if (line_end == std::string_view::npos) line_end = source.size();
    ++line_no;
    std::string_view line = source.substr(line_begin, line_end - line_begin);
    size_t marker = line.find(kMarker);
    if (marker != std::string_view::npos) {
      auto problem = [&](const std::string& what) {
        scan.problems.push_back("line " + std::to_string(line_no) + ": " + what);
      };
      size_t comment = line.rfind("//", marker);
      const bool comment_only =
          comment != std::string_view::npos &&
          line.find_first_not_of(" \t", 0) == comment;  // prose about kope:tune, not an annotation
      if (comment_only) {
        // Nothing to annotate: a comment line that mentions the marker.
      } else if (comment == std::string_view::npos) {
        problem("kope:tune must be in a // comment at the end of the line it annotates");
      } else {
        std::string_view code = line.substr(0, comment);
        std::optional<Declaration> decl = ParseDefine(code);
        if (!decl) decl = ParseConstant(code);
        std::vector<std::string> values = SplitValues(line.substr(marker + kMarker.size()));
        bool values_ok = !values.empty() && values.size() <= kMaxValues;
        for (const std::string& v : values) {
          values_ok = values_ok && std::all_of(v.begin(), v.end(), IsValueChar);
        }
        std::set<std::string> distinct(values.begin(), values.end());
        if (!decl) {
          problem(
              "kope:tune must annotate `#define NAME VALUE` or a const/constexpr `NAME = "
              "VALUE;` declaration");
        } else if (!values_ok) {
          problem("kope:tune for " + decl->name +
                  " needs 1 to 32 values made of letters, digits, '_', '.', '+' or '-'");
        } else if (distinct.size() != values.size()) {
          problem("kope:tune for " + decl->name + " lists a value twice");
        } else if (names.count(decl->name) > 0) {
          problem(decl->name + " is annotated twice");
        } else if (scan.tunables.size() >= kMaxTunables) {
          problem("more than 16 tunables; " + decl->name + " is ignored");
        } else {
          Tunable t;
          t.name = decl->name;
          t.value =
              std::string(code.substr(decl->value_begin, decl->value_end - decl->value_begin));
          t.values = std::move(values);
          if (std::find(t.values.begin(), t.values.end(), t.value) == t.values.end()) {
            InsertCurrent(t.value, &t.values);
          }
          t.line = line_no;
          t.value_offset = line_begin + decl->value_begin;
          t.value_length = decl->value_end - decl->value_begin;
          names.insert(t.name);
          scan.tunables.push_back(std::move(t));
        }
      }
    }
    if (line_end == source.size()) break;
    line_begin = line_end + 1;
  }
  return scan;
}

TuningPoint CurrentPoint(const std::vector<Tunable>& tunables) {
  TuningPoint point;
  for (const Tunable& t : tunables) point[t.name] = t.value;
  return point;
}

std::string FormatPoint(const TuningPoint& point) {
  std::string out;
  for (const auto& [name, value] : point) {
    if (!out.empty()) out += ' ';
    out += name + "=" + value;
  }
  return out;
}

Result<std::string> ApplyPoint(std::string_view source, const TuningPoint& point) {
  TunableScan scan = FindTunables(source);
  std::vector<std::pair<const Tunable*, const std::string*>> edits;
  for (const auto& [name, value] : point) {
    auto it = std::find_if(scan.tunables.begin(), scan.tunables.end(),
                           [&](const Tunable& t) { return t.name == name; });
    if (it == scan.tunables.end()) {
      return Status::InvalidArgument("the kernel declares no tunable named " + name);
    }
    if (std::find(it->values.begin(), it->values.end(), value) == it->values.end()) {
      return Status::InvalidArgument(value + " is not among the values of " + name);
    }
    edits.emplace_back(&*it, &value);
  }
  std::sort(edits.begin(), edits.end(), [](const auto& a, const auto& b) {
    return a.first->value_offset > b.first->value_offset;
  });
  std::string out(source);
  for (const auto& [tunable, value] : edits) {
    out.replace(tunable->value_offset, tunable->value_length, *value);
  }
  return out;
}

std::vector<TuningMove> NeighbourMoves(const std::vector<Tunable>& tunables) {
  std::vector<TuningMove> moves;
  for (const Tunable& t : tunables) {
    auto it = std::find(t.values.begin(), t.values.end(), t.value);
    if (it == t.values.end()) continue;
    const size_t i = static_cast<size_t>(it - t.values.begin());
    for (int dir : {+1, -1}) {
      if (dir < 0 && i == 0) continue;
      const size_t j = dir > 0 ? i + 1 : i - 1;
      if (j >= t.values.size()) continue;
      TuningMove m;
      m.name = t.name;
      m.from = t.value;
      m.to = t.values[j];
      m.list_direction = dir;
      std::optional<double> a = AsNumber(m.from), b = AsNumber(m.to);
      m.numeric_direction = a && b ? (*b > *a ? 1 : (*b < *a ? -1 : 0)) : 0;
      moves.push_back(std::move(m));
    }
  }
  return moves;
}

std::string DescribeMove(const TuningMove& move) {
  return "tune " + move.name + " " + move.from + " -> " + move.to;
}

std::optional<TuningMove> ParseMoveDescription(std::string_view decision) {
  if (decision.substr(0, 5) != "tune ") return std::nullopt;
  std::string_view rest = decision.substr(5);
  size_t sp = rest.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  TuningMove m;
  m.name = std::string(rest.substr(0, sp));
  rest.remove_prefix(sp + 1);
  size_t arrow = rest.find(" -> ");
  if (arrow == std::string_view::npos) return std::nullopt;
  m.from = std::string(rest.substr(0, arrow));
  rest.remove_prefix(arrow + 4);
  size_t end = 0;
  while (end < rest.size() && IsValueChar(rest[end])) ++end;
  m.to = std::string(rest.substr(0, end));
  if (m.name.empty() || m.from.empty() || m.to.empty()) return std::nullopt;
  std::optional<double> a = AsNumber(m.from), b = AsNumber(m.to);
  m.numeric_direction = a && b ? (*b > *a ? 1 : (*b < *a ? -1 : 0)) : 0;
  return m;
}

}  // namespace kope::agent
