#include "toml_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <vector>

namespace kope::task_internal {
namespace {

// Edit distance, to suggest a key for a typo.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

constexpr std::string_view kKeywords[] = {"alignas",       "alignof",     "and",
                                          "and_eq",        "asm",         "auto",
                                          "bitand",        "bitor",       "bool",
                                          "break",         "case",        "catch",
                                          "char",          "char8_t",     "char16_t",
                                          "char32_t",      "class",       "compl",
                                          "concept",       "const",       "consteval",
                                          "constexpr",     "constinit",   "const_cast",
                                          "continue",      "co_await",    "co_return",
                                          "co_yield",      "decltype",    "default",
                                          "delete",        "do",          "double",
                                          "dynamic_cast",  "else",        "enum",
                                          "explicit",      "export",      "extern",
                                          "false",         "float",       "for",
                                          "friend",        "goto",        "if",
                                          "inline",        "int",         "long",
                                          "mutable",       "namespace",   "new",
                                          "noexcept",      "not",         "not_eq",
                                          "nullptr",       "operator",    "or",
                                          "or_eq",         "private",     "protected",
                                          "public",        "register",    "reinterpret_cast",
                                          "requires",      "return",      "short",
                                          "signed",        "sizeof",      "static",
                                          "static_assert", "static_cast", "struct",
                                          "switch",        "template",    "this",
                                          "thread_local",  "throw",       "true",
                                          "try",           "typedef",     "typeid",
                                          "typename",      "union",       "unsigned",
                                          "using",         "virtual",     "void",
                                          "volatile",      "wchar_t",     "while",
                                          "xor",           "xor_eq",      "restrict",
                                          "_Bool",         "_Complex",    "_Generic"};

}  // namespace

std::string FieldPath(const std::string& parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return parent + "." + std::string(key);
}

std::string IndexPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

Status FieldError(const std::string& path, const std::string& what) {
  return Status::InvalidArgument(path + ": " + what);
}

std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::none:
      return "nothing";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
  }
  return "an unknown value";
}

Status CheckKeys(const toml::table& table, const std::string& path,
                 std::initializer_list<std::string_view> allowed) {
  for (auto&& [key, node] : table) {
    const std::string_view name = key.str();
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
    std::string what = "unknown key";
    std::string_view nearest;
    size_t best = 3;  // suggest only within two edits
    for (std::string_view candidate : allowed) {
      const size_t d = EditDistance(name, candidate);
      if (d < best) {
        best = d;
        nearest = candidate;
      }
    }
    if (!nearest.empty()) {
      what += " (did you mean '" + std::string(nearest) + "'?)";
    } else {
      what += " (expected one of:";
      for (std::string_view candidate : allowed) what += " " + std::string(candidate);
      what += ")";
    }
    return FieldError(FieldPath(path, name), what);
  }
  return Status::Ok();
}

Result<std::string> AsString(const toml::node& node, const std::string& path) {
  if (const auto* s = node.as_string()) return s->get();
  return FieldError(path, "expected a string, got " + std::string(TypeName(node)));
}

Result<int64_t> AsInteger(const toml::node& node, const std::string& path) {
  if (const auto* i = node.as_integer()) return i->get();
  return FieldError(path, "expected an integer, got " + std::string(TypeName(node)));
}

Result<double> AsNumber(const toml::node& node, const std::string& path) {
  double value;
  if (const auto* i = node.as_integer()) {
    value = static_cast<double>(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    value = f->get();
  } else {
    return FieldError(path, "expected a number, got " + std::string(TypeName(node)));
  }
  if (!std::isfinite(value)) return FieldError(path, "must be a finite number");
  return value;
}

Result<const toml::table*> AsTable(const toml::node& node, const std::string& path) {
  if (const auto* t = node.as_table()) return t;
  return FieldError(path, "expected a table, got " + std::string(TypeName(node)));
}

Result<const toml::array*> AsArray(const toml::node& node, const std::string& path) {
  if (const auto* a = node.as_array()) return a;
  return FieldError(path, "expected an array, got " + std::string(TypeName(node)));
}

Result<const toml::node*> Required(const toml::table& table, const std::string& parent,
                                   std::string_view key) {
  if (const toml::node* node = table.get(key)) return node;
  return FieldError(FieldPath(parent, key), "missing required field");
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool IsCIdentifier(std::string_view s) {
  return IsIdentifier(s) &&
         std::find(std::begin(kKeywords), std::end(kKeywords), s) == std::end(kKeywords);
}

// An integer (a constant) or a string (an expression of the sizes).
Result<Expr> ReadExpr(const toml::node& node, const std::string& path) {
  std::string text;
  if (const auto* i = node.as_integer()) {
    text = std::to_string(i->get());
  } else if (const auto* s = node.as_string()) {
    text = s->get();
  } else {
    return FieldError(
        path, "expected an integer or an expression string, got " + std::string(TypeName(node)));
  }
  Result<Expr> expr = Expr::Parse(text);
  if (!expr.ok()) return FieldError(path, "'" + text + "': " + expr.status().message());
  return expr;
}

}  // namespace kope::task_internal
