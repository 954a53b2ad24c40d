#include "kope/memory/text/text_similarity.h"

#include <gtest/gtest.h>

namespace kope::memory {
namespace {

TEST(TextSimilarityTest, Words) {
  EXPECT_EQ(TextWords("Vectorize LOADS with float4; a __m256 x"),
            (std::vector<std::string>{"vectorize", "load", "with", "float4", "m256"}));
  EXPECT_EQ(TextWords("class pass gas"), (std::vector<std::string>{"class", "pass", "gas"}));
  EXPECT_TRUE(TextWords(" - ; ").empty());
}

TEST(TextSimilarityTest, MoreSharedAndRarerWordsScoreHigher) {
  std::vector<std::string_view> docs = {
      "warp shuffle reduction of the row max",  // warp, shuffle, row
      "vectorize loads with float4",            // nothing
      "reduce the row in shared memory",        // row
      "warp level reduction of rows",           // warp, row
  };
  std::vector<double> s = LexicalBm25(docs, "warp shuffle for each row");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1], 0.0);
  EXPECT_GT(s[0], s[3]);
  EXPECT_GT(s[3], s[2]);
  EXPECT_GT(s[2], 0.0);
  // The same input gives the same scores.
  EXPECT_EQ(s, LexicalBm25(docs, "warp shuffle for each row"));
}

TEST(TextSimilarityTest, EmptyInputs) {
  EXPECT_TRUE(LexicalBm25({}, "x y").empty());
  EXPECT_EQ(LexicalBm25({"abc def"}, ""), std::vector<double>{0.0});
  EXPECT_GT(LexicalBm25({"abc def"}, "def")[0], 0.0);  // one candidate still scores
}

}  // namespace
}  // namespace kope::memory
