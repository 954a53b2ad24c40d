#include "kope/task/expr.h"

#include <cctype>
#include <string_view>
#include <utility>
#include <vector>

namespace kope {

struct Expr::Node {
  enum class Op { kNumber, kName, kNegate, kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kCdiv };
  Op op = Op::kNumber;
  int64_t number = 0;  // kNumber
  std::string name;    // kName
  std::vector<std::shared_ptr<const Node>> args;
};

namespace {

using Node = Expr::Node;
using NodePtr = std::shared_ptr<const Node>;
using Op = Node::Op;

// Deeper nesting, or a longer text, is an error rather than a deep recursion
// (evaluation recurses once per operator of a chain).
constexpr int kMaxDepth = 200;
constexpr size_t kMaxLength = 1000;

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

NodePtr MakeNode(Op op, std::vector<NodePtr> args) {
  auto node = std::make_shared<Node>();
  node->op = op;
  node->args = std::move(args);
  return node;
}

// Recursive descent over
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/' | '%') unary)*
//   unary   := '-' unary | primary
//   primary := integer | name | function '(' sum ',' sum ')' | '(' sum ')'
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<NodePtr> ParseAll() {
    KOPE_ASSIGN_OR_RETURN(NodePtr root, ParseSum(0));
    SkipSpace();
    if (pos_ < text_.size()) return ErrorHere("unexpected '" + std::string(1, text_[pos_]) + "'");
    return root;
  }

 private:
  Status ErrorAt(size_t pos, const std::string& what) const {
    return Status::InvalidArgument("at column " + std::to_string(pos + 1) + ": " + what);
  }
  Status ErrorHere(const std::string& what) const { return ErrorAt(pos_, what); }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // Consumes `c` after optional spaces when it is next.
  bool Accept(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status Expect(char c) {
    if (Accept(c)) return Status::Ok();
    return ErrorHere(std::string("expected '") + c + "'" + Found());
  }
  // ", found 'x'" or ", found the end", for error messages.
  std::string Found() const {
    if (pos_ >= text_.size()) return " but the expression ends";
    return std::string(" but found '") + text_[pos_] + "'";
  }

  Result<NodePtr> ParseSum(int depth) {
    if (depth > kMaxDepth) return ErrorHere("expression nested too deeply");
    KOPE_ASSIGN_OR_RETURN(NodePtr left, ParseProduct(depth));
    while (true) {
      Op op;
      if (Accept('+')) {
        op = Op::kAdd;
      } else if (Accept('-')) {
        op = Op::kSub;
      } else {
        return left;
      }
      KOPE_ASSIGN_OR_RETURN(NodePtr right, ParseProduct(depth));
      left = MakeNode(op, {std::move(left), std::move(right)});
    }
  }

  Result<NodePtr> ParseProduct(int depth) {
    KOPE_ASSIGN_OR_RETURN(NodePtr left, ParseUnary(depth));
    while (true) {
      Op op;
      if (Accept('*')) {
        op = Op::kMul;
      } else if (Accept('/')) {
        op = Op::kDiv;
      } else if (Accept('%')) {
        op = Op::kMod;
      } else {
        return left;
      }
      KOPE_ASSIGN_OR_RETURN(NodePtr right, ParseUnary(depth));
      left = MakeNode(op, {std::move(left), std::move(right)});
    }
  }

  Result<NodePtr> ParseUnary(int depth) {
    if (depth > kMaxDepth) return ErrorHere("expression nested too deeply");
    if (Accept('-')) {
      KOPE_ASSIGN_OR_RETURN(NodePtr operand, ParseUnary(depth + 1));
      return MakeNode(Op::kNegate, {std::move(operand)});
    }
    return ParsePrimary(depth);
  }

  Result<NodePtr> ParsePrimary(int depth) {
    SkipSpace();
    if (pos_ >= text_.size()) return ErrorHere("expected a number, a size name or '('" + Found());
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      KOPE_ASSIGN_OR_RETURN(NodePtr inner, ParseSum(depth + 1));
      KOPE_RETURN_IF_ERROR(Expect(')'));
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return ParseNumber();
    if (IsNameStart(c)) return ParseNameOrCall(depth);
    return ErrorHere("expected a number, a size name or '('" + Found());
  }

  Result<NodePtr> ParseNumber() {
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_] - '0';
      if (__builtin_mul_overflow(value, int64_t{10}, &value) ||
          __builtin_add_overflow(value, int64_t{digit}, &value)) {
        return ErrorAt(start, "integer literal does not fit in 64 bits");
      }
      ++pos_;
    }
    if (pos_ < text_.size() && IsNameChar(text_[pos_])) {
      return ErrorAt(pos_, std::string("unexpected '") + text_[pos_] + "' after a number");
    }
    auto node = std::make_shared<Node>();
    node->op = Op::kNumber;
    node->number = value;
    return NodePtr(std::move(node));
  }

  Result<NodePtr> ParseNameOrCall(int depth) {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    const size_t after_name = pos_;
    SkipSpace();
    const bool call = pos_ < text_.size() && text_[pos_] == '(';
    Op op = Op::kName;
    if (name == "min") op = Op::kMin;
    if (name == "max") op = Op::kMax;
    if (name == "cdiv") op = Op::kCdiv;
    if (op == Op::kName) {
      if (call) return ErrorAt(start, "unknown function '" + name + "' (known: min, max, cdiv)");
      pos_ = after_name;
      auto node = std::make_shared<Node>();
      node->op = Op::kName;
      node->name = std::move(name);
      return NodePtr(std::move(node));
    }
    if (!call) return ErrorHere("expected '(' after '" + name + "'" + Found());
    ++pos_;
    KOPE_ASSIGN_OR_RETURN(NodePtr first, ParseSum(depth + 1));
    KOPE_RETURN_IF_ERROR(Expect(','));
    KOPE_ASSIGN_OR_RETURN(NodePtr second, ParseSum(depth + 1));
    KOPE_RETURN_IF_ERROR(Expect(')'));
    return MakeNode(op, {std::move(first), std::move(second)});
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Ceiling of a / b for b != 0, without overflow for any other operands.
int64_t CeilDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  const bool inexact = a % b != 0;
  const bool positive = (a < 0) == (b < 0);
  return inexact && positive ? q + 1 : q;
}

class Evaluator {
 public:
  Evaluator(const std::string& text, const std::map<std::string, int64_t>& sizes)
      : text_(text), sizes_(sizes) {}

  Result<int64_t> Eval(const Node& node) const {
    switch (node.op) {
      case Op::kNumber:
        return node.number;
      case Op::kName: {
        auto it = sizes_.find(node.name);
        if (it == sizes_.end()) return Error("unknown size '" + node.name + "'");
        return it->second;
      }
      case Op::kNegate: {
        KOPE_ASSIGN_OR_RETURN(int64_t v, Eval(*node.args[0]));
        int64_t out;
        if (__builtin_sub_overflow(int64_t{0}, v, &out)) return Overflow();
        return out;
      }
      default:
        break;
    }
    KOPE_ASSIGN_OR_RETURN(int64_t a, Eval(*node.args[0]));
    KOPE_ASSIGN_OR_RETURN(int64_t b, Eval(*node.args[1]));
    int64_t out = 0;
    switch (node.op) {
      case Op::kAdd:
        if (__builtin_add_overflow(a, b, &out)) return Overflow();
        return out;
      case Op::kSub:
        if (__builtin_sub_overflow(a, b, &out)) return Overflow();
        return out;
      case Op::kMul:
        if (__builtin_mul_overflow(a, b, &out)) return Overflow();
        return out;
      case Op::kDiv:
      case Op::kMod:
      case Op::kCdiv:
        if (b == 0) return Error("division by zero");
        if (b == -1 && a == INT64_MIN) return Overflow();
        if (node.op == Op::kDiv) return a / b;
        if (node.op == Op::kMod) return a % b;
        return CeilDiv(a, b);
      case Op::kMin:
        return a < b ? a : b;
      case Op::kMax:
        return a > b ? a : b;
      default:
        return Status::Internal("unexpected expression node in '" + text_ + "'");
    }
  }

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument(what + " in '" + text_ + "'");
  }
  Status Overflow() const { return Error("64-bit integer overflow"); }

  const std::string& text_;
  const std::map<std::string, int64_t>& sizes_;
};

void CollectNames(const Node& node, std::set<std::string>* names) {
  if (node.op == Op::kName) names->insert(node.name);
  for (const NodePtr& arg : node.args) CollectNames(*arg, names);
}

}  // namespace

Result<Expr> Expr::Parse(const std::string& text) {
  if (text.size() > kMaxLength) {
    return Status::InvalidArgument("expression longer than " + std::to_string(kMaxLength) +
                                   " characters");
  }
  Parser parser(text);
  KOPE_ASSIGN_OR_RETURN(NodePtr root, parser.ParseAll());
  Expr expr;
  expr.text_ = text;
  expr.root_ = std::move(root);
  return expr;
}

Result<int64_t> Expr::Evaluate(const std::map<std::string, int64_t>& sizes) const {
  if (root_ == nullptr) return Status::FailedPrecondition("evaluating an empty expression");
  return Evaluator(text_, sizes).Eval(*root_);
}

std::set<std::string> Expr::Names() const {
  std::set<std::string> names;
  if (root_ != nullptr) CollectNames(*root_, &names);
  return names;
}

}  // namespace kope
