#include "kope/memory/text/error_signature.h"

#include <gtest/gtest.h>

namespace kope::memory {
namespace {

TEST(ErrorSignatureTest, NvccErrorKeepsIdentifierDropsPathAndLine) {
  EXPECT_EQ(NormalizeError("/tmp/kope-123/kernel.cu(45): error: identifier \"__shfl_down\" is "
                           "undefined\n\n1 error detected in the compilation."),
            "<file>(N): error: identifier \"__shfl_down\" is undefined | N error detected in the "
            "compilation.");
}

TEST(ErrorSignatureTest, RecurringErrorsCompareEqual) {
  std::string a = NormalizeError(
      "/work/a/x.cc:12:5: error: 'tile' was not declared in this scope\n  12 |   tile[i] = 0;");
  std::string b = NormalizeError(
      "/home/b/y/x.cc:98:13: error: 'tile' was not declared in this scope\n  98 |   tile[j] = 1;");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, "<file>:N:N: error: 'tile' was not declared in this scope");
  // Candidates compiled under their attempt's file name, without a folder.
  EXPECT_EQ(NormalizeError("attempt_2.cc:12:5: error: 'tile' was not declared in this scope"), a);
  EXPECT_EQ(NormalizeError("attempt_3.cc:98:13: error: 'tile' was not declared in this scope"), a);
}

TEST(ErrorSignatureTest, NumbersInsideIdentifiersStay) {
  EXPECT_EQ(NormalizeError("error: no match for __m256 in sm_90 at 0x7ffd1234"),
            "error: no match for __m256 in sm_90 at N");
}

TEST(ErrorSignatureTest, WithoutTheWordErrorTheFirstLineCounts) {
  EXPECT_EQ(NormalizeError("\n  Segmentation fault (core dumped) after 3.5 s  \nmore"),
            "Segmentation fault (core dumped) after N s");
  EXPECT_EQ(NormalizeError(""), "");
  EXPECT_EQ(NormalizeError(" \n\t\n"), "");
}

TEST(ErrorSignatureTest, AtMostThreeErrorLinesAndBoundedLength) {
  std::string many;
  for (int i = 0; i < 10; ++i) many += "error: problem " + std::to_string(i) + "\n";
  EXPECT_EQ(NormalizeError(many), "error: problem N | error: problem N | error: problem N");
  EXPECT_LE(NormalizeError("error: " + std::string(1000, 'x')).size(), 240u);
}

}  // namespace
}  // namespace kope::memory
