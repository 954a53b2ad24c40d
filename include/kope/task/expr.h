// Integer expressions of named sizes: shapes ("H - KH + 1"), byte and flop
// counts ("4 * (M*K + K*N + M*N)"), reduction lengths.
//
// Grammar: integers, size names ([A-Za-z_][A-Za-z0-9_]*), + - * / % (integer,
// / and % truncate; division by zero is an error), parentheses, unary minus,
// and the functions min(a, b), max(a, b), cdiv(a, b) (ceiling division).
// Parsing and evaluation report errors as values. Thread-safe once built.
#ifndef KOPE_TASK_EXPR_H_
#define KOPE_TASK_EXPR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "kope/base/status.h"

namespace kope {

class Expr {
 public:
  // Parses `text`; the error message says where and what is wrong.
  static Result<Expr> Parse(const std::string& text);

  // Evaluates with the given size values; an unknown name is an error.
  Result<int64_t> Evaluate(const std::map<std::string, int64_t>& sizes) const;
  // The size names this expression uses.
  std::set<std::string> Names() const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;  // immutable, shared between copies
};

}  // namespace kope

#endif  // KOPE_TASK_EXPR_H_
