#include "kope/eval/inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

namespace kope {
namespace {

TEST(FillInput, NegativeIsStrictlyNegative) {
  std::mt19937_64 rng(1);
  std::vector<float> v(10000);
  Distribution d;
  d.kind = Distribution::Kind::kNegative;
  FillInput(v.data(), KOPE_F32, v.size(), d, rng);
  for (float x : v) ASSERT_LT(x, 0.0f);
}

TEST(FillInput, TiesHaveFewDistinctValues) {
  std::mt19937_64 rng(2);
  std::vector<double> v(10000);
  Distribution d;
  d.kind = Distribution::Kind::kTies;
  d.num_distinct = 5;
  FillInput(v.data(), KOPE_F64, v.size(), d, rng);
  std::set<double> distinct(v.begin(), v.end());
  EXPECT_LE(distinct.size(), 5u);
  EXPECT_GE(distinct.size(), 2u);
}

TEST(FillInput, WideSpansManyDecades) {
  std::mt19937_64 rng(3);
  std::vector<float> v(10000);
  Distribution d;
  d.kind = Distribution::Kind::kWide;
  FillInput(v.data(), KOPE_F32, v.size(), d, rng);
  float lo = 1e30f, hi = 0;
  for (float x : v) {
    lo = std::min(lo, std::fabs(x));
    hi = std::max(hi, std::fabs(x));
  }
  EXPECT_LT(lo, 1e-4f);
  EXPECT_GT(hi, 1e4f);
}

TEST(FillInput, IntegersStayInRange) {
  std::mt19937_64 rng(4);
  std::vector<int32_t> v(1000);
  Distribution d;
  d.kind = Distribution::Kind::kUniform;
  d.low = 3;
  d.high = 7;
  FillInput(v.data(), KOPE_I32, v.size(), d, rng);
  for (int32_t x : v) {
    ASSERT_GE(x, 3);
    ASSERT_LT(x, 7);
  }
}

TEST(FillInput, FreshSeedsGiveFreshValues) {
  std::mt19937_64 a(10), b(11);
  std::vector<float> x(64), y(64);
  FillInput(x.data(), KOPE_F32, x.size(), Distribution{}, a);
  FillInput(y.data(), KOPE_F32, y.size(), Distribution{}, b);
  EXPECT_NE(x, y);
}

TEST(FillInput, LargeInputsAreReproducibleAndBlocksDiffer) {
  // Large inputs are drawn in blocks of 65,536 elements on several threads: the same seed
  // gives the same values, and no block repeats another.
  const size_t n = 5 * 65536 + 123;
  std::vector<float> x(n), y(n);
  std::mt19937_64 a(42), b(42);
  FillInput(x.data(), KOPE_F32, n, Distribution{}, a);
  FillInput(y.data(), KOPE_F32, n, Distribution{}, b);
  EXPECT_EQ(x, y);
  for (size_t block = 1; block < 5; ++block) {
    EXPECT_FALSE(std::equal(x.begin(), x.begin() + 1000, x.begin() + block * 65536)) << block;
  }
  double sum = 0;
  for (float v : x) sum += v;
  EXPECT_NEAR(sum / n, 0.0, 0.02);  // standard normal by default
}

TEST(FillInput, BoolsAreZeroOrOneAndBoth) {
  std::mt19937_64 rng(5);
  std::vector<uint8_t> v(1000, 7);
  Distribution d;
  d.kind = Distribution::Kind::kUniform;
  d.low = 0;
  d.high = 2;
  FillInput(v.data(), KOPE_BOOL, v.size(), d, rng);
  EXPECT_EQ(std::set<uint8_t>(v.begin(), v.end()), (std::set<uint8_t>{0, 1}));
}

TEST(Poison, BoolPatternsAreNeverABool) {
  for (Poison p : {Poison::kNanA, Poison::kNanB, Poison::kFinite}) {
    std::vector<uint8_t> v(100, 0);
    FillPoison(v.data(), KOPE_BOOL, v.size(), p);
    EXPECT_EQ(std::count(v.begin(), v.end(), v[0]), 100);
    EXPECT_GT(v[0], 1);
  }
}

TEST(Poison, LargeFillsEveryElement) {
  std::vector<uint32_t> v(3u << 20, 0);
  FillPoison(v.data(), KOPE_F32, v.size(), Poison::kNanB);
  EXPECT_EQ(std::count(v.begin(), v.end(), 0xffa5a5a5u), static_cast<long>(v.size()));
}

TEST(Poison, FloatPatternsAreDistinctNaNsAndAFiniteOne) {
  float a = 0, b = 0, f = 0;
  FillPoison(&a, KOPE_F32, 1, Poison::kNanA);
  FillPoison(&b, KOPE_F32, 1, Poison::kNanB);
  FillPoison(&f, KOPE_F32, 1, Poison::kFinite);
  EXPECT_TRUE(std::isnan(a));
  EXPECT_TRUE(std::isnan(b));
  EXPECT_NE(std::memcmp(&a, &b, 4), 0);
  EXPECT_TRUE(std::isfinite(f));
  for (DType t : {KOPE_F64, KOPE_F16, KOPE_BF16}) {
    uint64_t x = 0;
    FillPoison(&x, t, 1, Poison::kNanA);
    EXPECT_TRUE(std::isnan(LoadAsDouble(&x, t, 0))) << DTypeName(t);
    FillPoison(&x, t, 1, Poison::kFinite);
    EXPECT_TRUE(std::isfinite(LoadAsDouble(&x, t, 0))) << DTypeName(t);
  }
}

TEST(Guard, DetectsTheFirstDamagedByte) {
  std::vector<uint8_t> g(256);
  FillGuard(g.data(), g.size());
  EXPECT_EQ(FirstGuardDamage(g.data(), g.size()), -1);
  g[17] ^= 1;
  EXPECT_EQ(FirstGuardDamage(g.data(), g.size()), 17);
}

}  // namespace
}  // namespace kope
