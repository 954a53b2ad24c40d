#include "text.h"

#include <gtest/gtest.h>

namespace kope::context::internal {
namespace {

TEST(Words, LowercasedWithoutStopWordsOrPlurals) {
  EXPECT_EQ(Words("Tile the loads with Shared memory; tile again"),
            (std::vector<std::string>{"again", "load", "memory", "shared", "tile"}));
  EXPECT_EQ(Words("vectorize-loads"), (std::vector<std::string>{"load", "vectorize"}));
  EXPECT_TRUE(Words("a an of").empty());
}

TEST(Jaccard, OfWordSets) {
  EXPECT_DOUBLE_EQ(Jaccard({"a", "b"}, {"a", "b"}), 1.0);
  EXPECT_DOUBLE_EQ(Jaccard({"a", "b"}, {"b", "c"}), 1.0 / 3);
  EXPECT_DOUBLE_EQ(Jaccard({}, {}), 0.0);
}

TEST(OneLine, CollapsesAndCutsAtAWord) {
  EXPECT_EQ(OneLine("  a\n  b\tc ", 100), "a b c");
  EXPECT_EQ(OneLine("alpha beta gamma delta", 14), "alpha beta...");
  // Never splits a UTF-8 sequence.
  std::string s = OneLine("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 8);
  EXPECT_EQ(s, "\xC3\xA9\xC3\xA9...");
}

TEST(FirstSentence, StopsAtTheFirstStop) {
  EXPECT_EQ(FirstSentence("Use float4 loads. Then unroll.", 100), "Use float4 loads.");
  EXPECT_EQ(FirstSentence("tile; unroll", 100), "tile");
}

TEST(ExcerptCode, DropsIncludesAndKeepsTheKernel) {
  std::string source =
      "// A kernel.\n// By someone.\n#include <cmath>\n#include \"kope/kernel.h\"\n\n";
  for (int i = 0; i < 30; ++i) source += "static int table" + std::to_string(i) + " = 0;\n";
  source += "__global__ void k(float* x) {\n  x[0] = 1;\n}\n";
  const std::string excerpt = ExcerptCode(source, 10);
  EXPECT_EQ(excerpt.find("#include"), std::string::npos);
  EXPECT_EQ(excerpt.find("By someone"), std::string::npos);
  EXPECT_NE(excerpt.find("__global__ void k"), std::string::npos);
  EXPECT_NE(excerpt.find("lines before"), std::string::npos);
  EXPECT_LE(LineCount(excerpt), 12u);
  EXPECT_EQ(ExcerptCode("int x;\n", 10), "int x;\n");
}

TEST(DiffHunks, WithoutHeaderAndCapped) {
  const std::string diff = "--- a/parent\n+++ b/attempt\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n";
  EXPECT_EQ(DiffHunks(diff, 10), "@@ -1,2 +1,2 @@\n-a\n+b\n c\n");
  EXPECT_EQ(DiffHunks(diff, 2), "@@ -1,2 +1,2 @@\n-a\n... (2 more diff lines)\n");
}

TEST(HumanCount, Readable) {
  EXPECT_EQ(HumanCount(0), "?");
  EXPECT_EQ(HumanCount(512), "512");
  EXPECT_EQ(HumanCount(2048), "2.0k");
  EXPECT_EQ(HumanCount(2.1e6), "2.1M");
  EXPECT_EQ(HumanCount(45e6), "45M");
}

}  // namespace
}  // namespace kope::context::internal
