#include "kope/eval/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kope {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Compare, WithinToleranceIsOk) {
  std::vector<float> e = {1.0f, -2.0f, 100.0f};
  std::vector<float> a = {1.000001f, -2.000001f, 100.0005f};
  Comparison c = CompareOutputs(e.data(), a.data(), KOPE_F32, e.size(), {1e-5, 1e-6});
  EXPECT_TRUE(c.ok);
  EXPECT_GT(c.max_abs_error, 0);
}

TEST(Compare, LargeOutputsMergeTheirBlocksInOrder) {
  // Over 2^20 elements, blocks are compared on several threads; the report is the same as
  // one pass would give: the first failure overall, every failure counted.
  const size_t n = (3u << 20) + 17;
  std::vector<float> e(n), a(n);
  for (size_t i = 0; i < n; ++i) e[i] = a[i] = static_cast<float>(i % 1000);
  a[(2u << 20) + 5] = -1.0f;
  a[n - 1] = kNan;
  a[(1u << 20) + 3] += 0.5f;
  Comparison c = CompareOutputs(e.data(), a.data(), KOPE_F32, n, {1e-5, 1e-6});
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_index, (1 << 20) + 3);
  EXPECT_EQ(c.expected, e[(1u << 20) + 3]);
  EXPECT_EQ(c.mismatches, 3);
  EXPECT_FALSE(c.nan_inf_mismatch);
  EXPECT_GE(c.max_abs_error, e[(2u << 20) + 5] + 1.0);
}

TEST(Compare, ReportsFirstMismatchAndCounts) {
  std::vector<float> e = {1, 2, 3, 4};
  std::vector<float> a = {1, 2.5f, 3, 5};
  Comparison c = CompareOutputs(e.data(), a.data(), KOPE_F32, e.size(), {1e-5, 1e-6});
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_index, 1);
  EXPECT_EQ(c.expected, 2);
  EXPECT_EQ(c.actual, 2.5);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(c.max_rel_error, 0.25);
}

TEST(Compare, NanAndInfPositionsMustMatch) {
  std::vector<float> e = {kNan, kInf, -kInf, 1};
  EXPECT_TRUE(CompareOutputs(e.data(), e.data(), KOPE_F32, 4, {1e-5, 0}).ok);
  std::vector<float> a = {kNan, kInf, kInf, 1};
  Comparison c = CompareOutputs(e.data(), a.data(), KOPE_F32, 4, {1e-5, 0});
  EXPECT_FALSE(c.ok);
  EXPECT_TRUE(c.nan_inf_mismatch);
  EXPECT_EQ(c.first_index, 2);
  std::vector<float> finite_expected = {1, 2}, nan_actual = {1, kNan};
  c = CompareOutputs(finite_expected.data(), nan_actual.data(), KOPE_F32, 2, {1, 1});
  EXPECT_FALSE(c.ok) << "a NaN passes no tolerance";
}

TEST(Compare, IntegersExact) {
  std::vector<int64_t> e = {5, 6}, a = {5, 7};
  EXPECT_FALSE(CompareOutputs(e.data(), a.data(), KOPE_I64, 2, {0, 0}).ok);
  EXPECT_TRUE(CompareOutputs(e.data(), e.data(), KOPE_I64, 2, {0, 0}).ok);
}

TEST(Compare, LowerPrecisionFailsF32Tolerance) {
  std::vector<float> e(100), a(100);
  for (int i = 0; i < 100; ++i) {
    e[i] = 1.0f + i * 0.0123f;
    a[i] = HalfToFloat(FloatToHalf(e[i]));
  }
  EXPECT_FALSE(CompareOutputs(e.data(), a.data(), KOPE_F32, 100, {1e-5, 1e-5}).ok);
}

TEST(Unravel, RowMajor) {
  EXPECT_EQ(Unravel(7, {2, 3, 4}), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(Unravel(23, {2, 3, 4}), (std::vector<int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace kope
