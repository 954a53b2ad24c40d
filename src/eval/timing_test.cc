#include "kope/eval/timing.h"

#include <gtest/gtest.h>

namespace kope {
namespace {

TEST(Timing, SummaryOfKnownSamples) {
  std::vector<int64_t> ns;
  for (int i = 1; i <= 11; ++i) ns.push_back(i * 1000);  // 1..11 us
  TimingSummary s = Summarize(ns);
  EXPECT_EQ(s.samples, 11);
  EXPECT_DOUBLE_EQ(s.median_s, 6e-6);
  EXPECT_DOUBLE_EQ(s.p20_s, 3e-6);
  EXPECT_DOUBLE_EQ(s.p80_s, 9e-6);
  EXPECT_DOUBLE_EQ(s.min_s, 1e-6);
  EXPECT_NEAR(s.measured_s, 66e-6, 1e-12);
  EXPECT_NEAR(s.spread, 1.0, 1e-12);
}

TEST(Timing, ConvergesOnlyWithSamplesTimeAndLowSpread) {
  TimingPolicy p = TimingPolicy::Screen();
  std::vector<int64_t> steady(20, 10'000'000);  // 20 x 10 ms, no spread
  EXPECT_TRUE(Converged(Summarize(steady), p));
  std::vector<int64_t> few(5, 100'000'000);
  EXPECT_FALSE(Converged(Summarize(few), p)) << "too few samples";
  std::vector<int64_t> short_ones(20, 1000);
  EXPECT_FALSE(Converged(Summarize(short_ones), p)) << "too little measured time";
  std::vector<int64_t> noisy;
  for (int i = 0; i < 40; ++i) noisy.push_back(i % 2 ? 10'000'000 : 12'000'000);
  EXPECT_FALSE(Converged(Summarize(noisy), p)) << "spread too large";
  EXPECT_FALSE(Converged(Summarize(steady), TimingPolicy::Confirm())) << "confirm needs 0.5 s";
}

TEST(Timing, EmptyIsZero) { EXPECT_EQ(Summarize({}).samples, 0); }

}  // namespace
}  // namespace kope
