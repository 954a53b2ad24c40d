#include "json_object.h"

#include <cstddef>
#include <nlohmann/json.hpp>

namespace kope::memory {
namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A recursive-descent scan of plain JSON. Every method returns false both for invalid text and
// for text outside the plain subset; the caller then asks the full parser.
class PlainScan {
 public:
  explicit PlainScan(std::string_view text) : t_(text) {}

  bool Object() {
    Space();
    if (!Peek('{') || !Value(0)) return false;
    Space();
    return i_ == t_.size();
  }

 private:
  static constexpr int kMaxDepth = 32;
  // A number of at most this many digits and no exponent is a finite double, as the full parser
  // requires.
  static constexpr size_t kMaxDigits = 300;

  bool Peek(char c) const { return i_ < t_.size() && t_[i_] == c; }
  void Space() {
    while (i_ < t_.size() && IsJsonSpace(t_[i_])) ++i_;
  }

  bool Value(int depth) {
    if (i_ >= t_.size()) return false;
    switch (t_[i_]) {
      case '{':
        return Members(depth + 1);
      case '[':
        return Elements(depth + 1);
      case '"':
        return String();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return Number();
    }
  }

  bool Members(int depth) {
    if (depth > kMaxDepth) return false;
    ++i_;  // '{'
    Space();
    if (Peek('}')) return ++i_, true;
    while (true) {
      if (!Peek('"') || !String()) return false;
      Space();
      if (!Peek(':')) return false;
      ++i_;
      Space();
      if (!Value(depth)) return false;
      Space();
      if (Peek('}')) return ++i_, true;
      if (!Peek(',')) return false;
      ++i_;
      Space();
    }
  }

  bool Elements(int depth) {
    if (depth > kMaxDepth) return false;
    ++i_;  // '['
    Space();
    if (Peek(']')) return ++i_, true;
    while (true) {
      if (!Value(depth)) return false;
      Space();
      if (Peek(']')) return ++i_, true;
      if (!Peek(',')) return false;
      ++i_;
      Space();
    }
  }

  // Printable ASCII without escapes.
  bool String() {
    ++i_;  // '"'
    while (i_ < t_.size()) {
      const unsigned char c = static_cast<unsigned char>(t_[i_++]);
      if (c == '"') return true;
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
    }
    return false;
  }

  bool Literal(std::string_view word) {
    if (t_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?
  bool Number() {
    if (Peek('-')) ++i_;
    size_t digits = 0;
    if (Peek('0')) {
      ++i_;
      digits = 1;
    } else {
      while (i_ < t_.size() && IsDigit(t_[i_])) ++i_, ++digits;
      if (digits == 0) return false;
    }
    if (Peek('.')) {
      ++i_;
      size_t fraction = 0;
      while (i_ < t_.size() && IsDigit(t_[i_])) ++i_, ++fraction;
      if (fraction == 0) return false;
      digits += fraction;
    }
    if (Peek('e') || Peek('E')) return false;
    return digits <= kMaxDigits;
  }

  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace

bool IsPlainJsonObject(std::string_view json) { return PlainScan(json).Object(); }

bool IsJsonObject(std::string_view json) {
  size_t first = 0;
  while (first < json.size() && IsJsonSpace(json[first])) ++first;
  if (first == json.size() || json[first] != '{') return false;
  return IsPlainJsonObject(json) || nlohmann::json::accept(json);
}

}  // namespace kope::memory
