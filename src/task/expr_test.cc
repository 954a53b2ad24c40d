#include "kope/task/expr.h"

#include <gtest/gtest.h>

#include <string>

namespace kope {
namespace {

const std::map<std::string, int64_t> kSizes = {
    {"M", 1024}, {"N", 1000}, {"K", 7}, {"H", 32}, {"KH", 3}, {"one", 1}, {"big", INT64_MAX},
};

struct ValueCase {
  std::string text;
  int64_t expected;
};

TEST(ExprTest, Evaluates) {
  const ValueCase cases[] = {
      {"42", 42},
      {"M", 1024},
      {"  M  ", 1024},
      {"M + N", 2024},
      {"M - N", 24},
      {"N - M", -24},
      {"2 + 3 * 4", 14},
      {"(2 + 3) * 4", 20},
      {"2 * 3 + 4", 10},
      {"10 - 4 - 3", 3},  // left associative
      {"100 / 10 / 5", 2},
      {"7 / 2", 3},
      {"-7 / 2", -3},  // truncates toward zero
      {"7 % 3", 1},
      {"-7 % 3", -1},
      {"-K", -7},
      {"--K", 7},
      {"-(K + 1)", -8},
      {"2 * -K", -14},
      {"H - KH + 1", 30},
      {"4 * (M*K + K*N + M*N)", 4 * (1024 * 7 + 7 * 1000 + 1024 * 1000)},
      {"min(M, N)", 1000},
      {"max(M, N)", 1024},
      {"min( M , max(K, one) )", 7},
      {"cdiv(N, 32)", 32},
      {"cdiv(1024, 32)", 32},
      {"cdiv(M + 1, 32)", 33},
      {"cdiv(-7, 2)", -3},
      {"cdiv(7, -2)", -3},
      {"cdiv(-7, -2)", 4},
      {"cdiv(0, 5)", 0},
      {"big", INT64_MAX},
      {"9223372036854775807", INT64_MAX},
      {"-9223372036854775807 - 1", INT64_MIN},
      {"big / -1", -INT64_MAX},
  };
  for (const ValueCase& c : cases) {
    Result<Expr> expr = Expr::Parse(c.text);
    ASSERT_TRUE(expr.ok()) << c.text << ": " << expr.status().ToString();
    EXPECT_EQ(expr->text(), c.text);
    Result<int64_t> value = expr->Evaluate(kSizes);
    ASSERT_TRUE(value.ok()) << c.text << ": " << value.status().ToString();
    EXPECT_EQ(*value, c.expected) << c.text;
  }
}

struct ErrorCase {
  std::string text;
  std::string expected;  // a substring of the message
};

TEST(ExprTest, ParseErrorsSayWhereAndWhat) {
  const ErrorCase cases[] = {
      {"", "at column 1: expected a number, a size name or '(' but the expression ends"},
      {"   ", "at column 4: expected a number"},
      {"(M + 1", "at column 7: expected ')' but the expression ends"},
      {"M +", "at column 4: expected a number"},
      {"M + * N", "at column 5: expected a number, a size name or '(' but found '*'"},
      {"M N", "at column 3: unexpected 'N'"},
      {"M)", "at column 2: unexpected ')'"},
      {"2M", "at column 2: unexpected 'M' after a number"},
      {"M ^ 2", "at column 3: unexpected '^'"},
      {"1.5", "at column 2: unexpected '.'"},
      {"foo(1, 2)", "at column 1: unknown function 'foo'"},
      {"min(1 2)", "at column 7: expected ','"},
      {"min(1, 2", "at column 9: expected ')'"},
      {"min", "expected '(' after 'min'"},
      {"max + 1", "at column 5: expected '(' after 'max'"},
      {"cdiv()", "at column 6: expected a number"},
      {"99999999999999999999", "at column 1: integer literal does not fit in 64 bits"},
      {std::string(300, '(') + "1" + std::string(300, ')'), "nested too deeply"},
      {std::string(300, '-') + "1", "nested too deeply"},
      {std::string(1001, '1'), "longer than 1000 characters"},
  };
  for (const ErrorCase& c : cases) {
    Result<Expr> expr = Expr::Parse(c.text);
    ASSERT_FALSE(expr.ok()) << c.text;
    EXPECT_EQ(expr.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(expr.status().message().find(c.expected), std::string::npos)
        << c.text.substr(0, 40) << " -> " << expr.status().message();
  }
}

TEST(ExprTest, EvaluationErrors) {
  const ErrorCase cases[] = {
      {"M / (K - 7)", "division by zero in 'M / (K - 7)'"},
      {"M % 0", "division by zero"},
      {"cdiv(M, 0)", "division by zero"},
      {"unknown + 1", "unknown size 'unknown' in 'unknown + 1'"},
      {"big + 1", "64-bit integer overflow in 'big + 1'"},
      {"-big - 2", "overflow"},
      {"big * 2", "overflow"},
      {"3037000500 * 3037000500", "overflow"},
      {"-(-9223372036854775807 - 1)", "overflow"},
      {"(-9223372036854775807 - 1) / -1", "overflow"},
      {"(-9223372036854775807 - 1) % -1", "overflow"},
  };
  for (const ErrorCase& c : cases) {
    Result<Expr> expr = Expr::Parse(c.text);
    ASSERT_TRUE(expr.ok()) << c.text << ": " << expr.status().ToString();
    Result<int64_t> value = expr->Evaluate(kSizes);
    ASSERT_FALSE(value.ok()) << c.text << " = " << *value;
    EXPECT_EQ(value.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(value.status().message().find(c.expected), std::string::npos)
        << c.text << " -> " << value.status().message();
  }
}

TEST(ExprTest, NamesAreTheSizesUsed) {
  Result<Expr> expr = Expr::Parse("cdiv(M, BLOCK) * max(N, 1) + M - -x_2");
  ASSERT_TRUE(expr.ok());
  EXPECT_EQ(expr->Names(), (std::set<std::string>{"BLOCK", "M", "N", "x_2"}));
  Result<Expr> constant = Expr::Parse("4 * 8");
  ASSERT_TRUE(constant.ok());
  EXPECT_TRUE(constant->Names().empty());
  EXPECT_EQ(*constant->Evaluate({}), 32);
}

TEST(ExprTest, CopiesShareTheParsedTree) {
  Expr copy;
  {
    Result<Expr> expr = Expr::Parse("M * 2");
    ASSERT_TRUE(expr.ok());
    copy = *expr;
  }
  EXPECT_EQ(copy.text(), "M * 2");
  EXPECT_EQ(*copy.Evaluate(kSizes), 2048);
}

TEST(ExprTest, DefaultConstructedIsAnError) {
  Expr empty;
  EXPECT_FALSE(empty.Evaluate(kSizes).ok());
  EXPECT_TRUE(empty.Names().empty());
}

}  // namespace
}  // namespace kope
