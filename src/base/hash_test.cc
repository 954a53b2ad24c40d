#include "kope/base/hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kope {
namespace {

TEST(ContentHashTest, IsThirtyTwoLowercaseHexDigits) {
  std::string h = ContentHash("int kope_kernel();");
  ASSERT_EQ(h.size(), 32u);
  for (char c : h) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << h;
}

TEST(ContentHashTest, DependsOnEveryByte) {
  EXPECT_EQ(ContentHash("abc"), ContentHash(std::string("abc")));
  EXPECT_NE(ContentHash("abc"), ContentHash("abd"));
  EXPECT_NE(ContentHash("abc"), ContentHash("abc "));
  EXPECT_NE(ContentHash(""), ContentHash(std::string_view("\0", 1)));
}

TEST(ContentHashTest, KnownValueOfEmptyInput) {
  // XXH3-128 of the empty input, from the xxHash reference implementation.
  EXPECT_EQ(ContentHash(""), "99aa06d3014798d86001c324468d497f");
}

TEST(ContentHashTest, PartsAreLengthPrefixed) {
  EXPECT_NE(ContentHash({"ab", "c"}), ContentHash({"a", "bc"}));
  EXPECT_EQ(ContentHash({"ab", "c"}), ContentHash({"ab", "c"}));
  EXPECT_NE(ContentHash({"abc"}), ContentHash("abc"));
  EXPECT_NE(ContentHash({"", "x"}), ContentHash({"x", ""}));
}

TEST(BufferHashTest, DetectsAModifiedElement) {
  std::vector<float> v(1000, 1.5f);
  uint64_t before = BufferHash(v.data(), v.size() * sizeof(float));
  EXPECT_EQ(before, BufferHash(v.data(), v.size() * sizeof(float)));
  v[777] = 1.5000001f;
  EXPECT_NE(before, BufferHash(v.data(), v.size() * sizeof(float)));
  EXPECT_NE(BufferHash(v.data(), 8), BufferHash(v.data(), 12));
}

TEST(BufferHashTest, LargeBuffersDependOnEveryBlockAndTheirOrder) {
  // Over 16 MiB, blocks are hashed on several threads: a change in any block shows, and so
  // does swapping two blocks' contents.
  const size_t block = 16u << 20;
  std::vector<uint8_t> v(3 * block + 100);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<uint8_t>((i + 1) * 0x9e3779b97f4a7c15ull >> 56);
  const uint64_t before = BufferHash(v.data(), v.size());
  EXPECT_EQ(before, BufferHash(v.data(), v.size()));
  for (size_t at : {size_t{5}, block + 7, 3 * block + 99}) {
    v[at] ^= 1;
    EXPECT_NE(before, BufferHash(v.data(), v.size())) << at;
    v[at] ^= 1;
  }
  std::vector<uint8_t> swapped(v);
  std::swap_ranges(swapped.begin(), swapped.begin() + block, swapped.begin() + block);
  ASSERT_FALSE(std::equal(v.begin(), v.begin() + block, v.begin() + block));
  EXPECT_NE(before, BufferHash(swapped.data(), swapped.size()));
  EXPECT_NE(BufferHash(v.data(), v.size() - 1), before);
}

}  // namespace
}  // namespace kope
