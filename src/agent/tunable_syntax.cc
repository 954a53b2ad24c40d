#include "tunable_syntax.h"

#include <cctype>

namespace kope::agent::internal {
namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The identifier that ends at `end` (exclusive) in `code`: its start, or npos.
size_t IdentifierBefore(std::string_view code, size_t end) {
  size_t b = end;
  while (b > 0 && IsIdentChar(code[b - 1])) --b;
  if (b == end || !IsIdentStart(code[b])) return std::string_view::npos;
  return b;
}

// The name assigned by the `=` at `eq`, with an optional `: ANNOTATION` between them; "" when
// the target is not a plain name.
std::string AssignedName(std::string_view code, size_t eq) {
  size_t e = eq;
  while (e > 0 && IsSpace(code[e - 1])) --e;
  // A token of name characters and dots: the name, or the annotation.
  size_t b = e;
  while (b > 0 && (IsIdentChar(code[b - 1]) || code[b - 1] == '.')) --b;
  if (b == e) return "";
  size_t before = b;
  while (before > 0 && IsSpace(code[before - 1])) --before;
  if (before > 0 && code[before - 1] == ':') {  // `NAME: ANNOTATION =`
    size_t ne = before - 1;
    while (ne > 0 && IsSpace(code[ne - 1])) --ne;
    size_t nb = IdentifierBefore(code, ne);
    if (nb == std::string_view::npos || (nb > 0 && code[nb - 1] == '.')) return "";
    return std::string(code.substr(nb, ne - nb));
  }
  std::string_view token = code.substr(b, e - b);
  if (token.find('.') != std::string_view::npos || !IsIdentStart(token.front())) return "";
  return std::string(token);
}

}  // namespace

bool IsValueChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
         c == '-';
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

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

std::vector<Declaration> PythonAssignments(std::string_view code) {
  constexpr std::string_view kNotAssignment = "=!<>+-*/%&|^:@~";
  constexpr std::string_view kAfterValue = ",)]};";
  std::vector<Declaration> found;
  for (size_t eq = code.find('='); eq != std::string_view::npos; eq = code.find('=', eq + 1)) {
    if (eq + 1 < code.size() && code[eq + 1] == '=') {
      ++eq;  // `==`
      continue;
    }
    if (eq == 0 || kNotAssignment.find(code[eq - 1]) != std::string_view::npos) continue;
    size_t vb = eq + 1;
    while (vb < code.size() && IsSpace(code[vb])) ++vb;
    size_t ve = vb;
    while (ve < code.size() && IsValueChar(code[ve])) ++ve;
    if (ve == vb) continue;
    size_t after = ve;
    while (after < code.size() && IsSpace(code[after])) ++after;
    if (after < code.size() && kAfterValue.find(code[after]) == std::string_view::npos) continue;
    std::string name = AssignedName(code, eq);
    if (name.empty()) continue;
    found.push_back({std::move(name), vb, ve});
  }
  return found;
}

bool LooksLikePython(std::string_view source) {
  size_t begin = 0;
  while (begin < source.size()) {
    size_t end = source.find('\n', begin);
    if (end == std::string_view::npos) end = source.size();
    std::string_view line = TrimRight(source.substr(begin, end - begin));
    if ((StartsWith(line, "import ") && line.back() != ';') || StartsWith(line, "def ") ||
        (StartsWith(line, "@") && line.size() > 1 && IsIdentStart(line[1])) ||
        (StartsWith(line, "from ") && line.find(" import ") != std::string_view::npos)) {
      return true;
    }
    begin = end + 1;
  }
  return false;
}

size_t PythonCommentStart(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace kope::agent::internal
