#include "kope/agent/tunables.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "tunable_syntax.h"

namespace kope::agent {
namespace {

using internal::Declaration;
using internal::IsSpace;
using internal::IsValueChar;

constexpr std::string_view kMarker = "kope:tune";
constexpr size_t kMaxValues = 32;
constexpr size_t kMaxTunables = 16;

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

// A Python annotation's text after the marker: `NAME = V1, V2` names its tunable, `V1 V2` not.
struct AnnotationText {
  std::string name;
  std::vector<std::string> values;
};

AnnotationText ReadAnnotation(std::string_view rest) {
  size_t i = 0;
  while (i < rest.size() && IsSpace(rest[i])) ++i;
  size_t name_end = i;
  while (name_end < rest.size() &&
         (std::isalnum(static_cast<unsigned char>(rest[name_end])) || rest[name_end] == '_')) {
    ++name_end;
  }
  size_t eq = name_end;
  while (eq < rest.size() && IsSpace(rest[eq])) ++eq;
  if (name_end > i && eq < rest.size() && rest[eq] == '=' &&
      !std::isdigit(static_cast<unsigned char>(rest[i]))) {
    return {std::string(rest.substr(i, name_end - i)), SplitValues(rest.substr(eq + 1))};
  }
  return {"", SplitValues(rest)};
}

// One scan of a source: line by line, C annotations (`// kope:tune`) everywhere, Python ones
// (`# kope:tune`) where the source reads as Python.
class Scanner {
 public:
  explicit Scanner(std::string_view source)
      : source_(source), python_(internal::LooksLikePython(source)) {}

  TunableScan Run() {
    size_t line_begin = 0;
    int line_no = 0;
    while (line_begin <= source_.size()) {
      size_t line_end = source_.find('\n', line_begin);
      if (line_end == std::string_view::npos) line_end = source_.size();
      ++line_no;
      Line(source_.substr(line_begin, line_end - line_begin), line_no, line_begin);
      if (line_end == source_.size()) break;
      line_begin = line_end + 1;
    }
    for (const Pending& p : pending_) {
      Problem(p.line, "kope:tune " + p.name + " is followed by no line that assigns it");
    }
    return std::move(scan_);
  }

 private:
  // A named Python annotation on a line of its own, for the next line of code.
  struct Pending {
    std::string name;
    std::vector<std::string> values;
    int line = 0;
  };

  void Problem(int line_no, const std::string& what) {
    scan_.problems.push_back("line " + std::to_string(line_no) + ": " + what);
  }

  void Line(std::string_view line, int line_no, size_t line_begin) {
    const size_t hash = python_ ? internal::PythonCommentStart(line) : std::string_view::npos;
    const size_t first = line.find_first_not_of(" \t\r");
    const bool code_line = first != std::string_view::npos && first != hash;
    if (code_line && !pending_.empty()) Assign(line.substr(0, hash), line_no, line_begin);
    const size_t marker = line.find(kMarker);
    if (marker == std::string_view::npos) return;
    if (hash != std::string_view::npos && hash < marker) {
      PythonAnnotation(line, hash, marker, line_no, line_begin);
    } else {
      CAnnotation(line, marker, line_no, line_begin);
    }
  }

  void CAnnotation(std::string_view line, size_t marker, int line_no, size_t line_begin) {
    size_t comment = line.rfind("//", marker);
    const bool comment_only = comment != std::string_view::npos &&
                              line.find_first_not_of(" \t", 0) == comment;  // prose, not one
    if (comment_only) return;
    if (comment == std::string_view::npos) {
      Problem(line_no, python_ ? "kope:tune must be in a # comment at the end of the line it "
                                 "annotates, or on the line above it naming the tunable"
                               : "kope:tune must be in a // comment at the end of the line it "
                                 "annotates");
      return;
    }
    std::string_view code = line.substr(0, comment);
    std::optional<Declaration> decl = internal::ParseDefine(code);
    if (!decl) decl = internal::ParseConstant(code);
    if (!decl) {
      Problem(line_no,
              "kope:tune must annotate `#define NAME VALUE` or a const/constexpr `NAME = "
              "VALUE;` declaration");
      return;
    }
    Add(*decl, SplitValues(line.substr(marker + kMarker.size())), code, line_no, line_begin);
  }

  void PythonAnnotation(std::string_view line, size_t hash, size_t marker, int line_no,
                        size_t line_begin) {
    AnnotationText text = ReadAnnotation(line.substr(marker + kMarker.size()));
    const bool comment_only = line.find_first_not_of(" \t") == hash;
    if (comment_only) {
      // Unnamed, it is prose about kope:tune; named, it annotates the next line of code.
      if (!text.name.empty()) pending_.push_back({text.name, std::move(text.values), line_no});
      return;
    }
    std::string_view code = line.substr(0, hash);
    std::vector<Declaration> assignments = internal::PythonAssignments(code);
    std::optional<Declaration> decl;
    for (const Declaration& d : assignments) {
      if (text.name.empty() ? assignments.size() == 1 : d.name == text.name) {
        decl = d;
        break;
      }
    }
    if (!decl) {
      Problem(line_no, !text.name.empty() ? "kope:tune " + text.name + ": the line assigns no " +
                                                text.name + " = VALUE"
                       : assignments.empty()
                           ? "kope:tune must annotate `NAME = VALUE`, `NAME: TYPE = VALUE` or "
                             "a keyword argument `NAME=VALUE`"
                           : "the line assigns several names: say which one, `# kope:tune NAME "
                             "= V1, V2`");
      return;
    }
    Add(*decl, std::move(text.values), code, line_no, line_begin);
  }

  // The line of code after named annotations: each must be assigned there.
  void Assign(std::string_view code, int line_no, size_t line_begin) {
    std::vector<Pending> pending = std::move(pending_);
    pending_.clear();
    std::vector<Declaration> assignments = internal::PythonAssignments(code);
    for (Pending& p : pending) {
      auto it = std::find_if(assignments.begin(), assignments.end(),
                             [&](const Declaration& d) { return d.name == p.name; });
      if (it == assignments.end()) {
        Problem(p.line, "kope:tune " + p.name + ": the next line (" + std::to_string(line_no) +
                            ") assigns no " + p.name + " = VALUE");
        continue;
      }
      Add(*it, std::move(p.values), code, line_no, line_begin);
    }
  }

  // The checks every annotation passes; `decl` is within `code`, the start of the line at
  // `line_begin` in the source.
  void Add(const Declaration& decl, std::vector<std::string> values, std::string_view code,
           int line_no, size_t line_begin) {
    bool values_ok = !values.empty() && values.size() <= kMaxValues;
    for (const std::string& v : values) {
      values_ok = values_ok && std::all_of(v.begin(), v.end(), IsValueChar);
    }
    std::set<std::string> distinct(values.begin(), values.end());
    if (!values_ok) {
      Problem(line_no, "kope:tune for " + decl.name +
                           " needs 1 to 32 values made of letters, digits, '_', '.', '+' or '-'");
    } else if (distinct.size() != values.size()) {
      Problem(line_no, "kope:tune for " + decl.name + " lists a value twice");
    } else if (names_.count(decl.name) > 0) {
      Problem(line_no, decl.name + " is annotated twice");
    } else if (scan_.tunables.size() >= kMaxTunables) {
      Problem(line_no, "more than 16 tunables; " + decl.name + " is ignored");
    } else {
      Tunable t;
      t.name = decl.name;
      t.value = std::string(code.substr(decl.value_begin, decl.value_end - decl.value_begin));
      t.values = std::move(values);
      if (std::find(t.values.begin(), t.values.end(), t.value) == t.values.end()) {
        InsertCurrent(t.value, &t.values);
      }
      t.line = line_no;
      t.value_offset = line_begin + decl.value_begin;
      t.value_length = decl.value_end - decl.value_begin;
      names_.insert(t.name);
      scan_.tunables.push_back(std::move(t));
    }
  }

  std::string_view source_;
  bool python_ = false;
  TunableScan scan_;
  std::set<std::string, std::less<>> names_;
  std::vector<Pending> pending_;
};

}  // namespace

bool MentionsTunables(std::string_view source) {
  return source.find(kMarker) != std::string_view::npos;
}

TunableScan FindTunables(std::string_view source) { return Scanner(source).Run(); }

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
