#include <gtest/gtest.h>

#include "kope/backend/cpu/cpu_backend.h"

namespace kope {
namespace {

TEST(CompilerDiagnostics, ParsesLocatedErrorsWithExcerpt) {
  const char* out =
      "candidate.cc: In function 'int kope_kernel(...)':\n"
      "candidate.cc:12:5: error: 'foo' was not declared in this scope\n"
      "   12 |     foo(x);\n"
      "      |     ^~~\n"
      "candidate.cc:3:1: warning: unused variable 'z' [-Wunused-variable]\n";
  auto d = ParseCompilerOutput(out);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].severity, "error");
  EXPECT_EQ(d[0].file, "candidate.cc");
  EXPECT_EQ(d[0].line, 12);
  EXPECT_EQ(d[0].column, 5);
  EXPECT_NE(d[0].message.find("foo(x)"), std::string::npos);
  EXPECT_EQ(d[1].severity, "warning");
}

TEST(CompilerDiagnostics, ErrorsComeBeforeWarningsAndAreCapped) {
  std::string out;
  for (int i = 1; i <= 20; ++i) out += "a.cc:" + std::to_string(i) + ":1: warning: w\n";
  out += "a.cc:99:1: error: the real problem\n";
  auto d = ParseCompilerOutput(out, 5);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].line, 99);
}

TEST(CompilerDiagnostics, LinkerUndefinedReference) {
  auto d = ParseCompilerOutput(
      "/usr/bin/ld: /tmp/x.o: in function `kope_kernel':\n"
      "x.cc:(.text+0x5): undefined reference to `missing_fn'\n"
      "collect2: error: ld returned 1 exit status\n");
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d[0].message.find("missing_fn"), std::string::npos);
  for (const auto& diag : d) EXPECT_EQ(diag.message.find("ld returned"), std::string::npos);
}

TEST(CompilerDiagnostics, LongMessagesAreTrimmed) {
  std::string out = "a.cc:1:1: error: " + std::string(5000, 'x') + "\n";
  auto d = ParseCompilerOutput(out);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_LT(d[0].message.size(), 1000u);
}

}  // namespace
}  // namespace kope
