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

// Runs the warm-up rule against a kernel whose first call takes `first_s` of wall time and every
// later one `per_call_s` (round trip `trip_s` per request); returns the calls of each request.
std::vector<int> Warmup(const TimingPolicy& p, double first_s, double per_call_s, double trip_s) {
  std::vector<int> requests;
  int calls = 0;
  double spent = 0;
  for (int count; (count = WarmupCalls(p, calls, spent)) > 0;) {
    requests.push_back(count);
    spent += trip_s + (calls == 0 ? first_s + (count - 1) * per_call_s : count * per_call_s);
    calls += count;
    if (requests.size() > 100) break;
  }
  return requests;
}

TEST(Timing, WarmupGoesAloneOnceThenInFewRequests) {
  const TimingPolicy p = TimingPolicy::Screen();  // at least 3 calls and 25 ms
  // A 50 us kernel behind a 0.5 ms round trip: one request per call took about 45 requests.
  std::vector<int> small = Warmup(p, 50e-6, 50e-6, 0.5e-3);
  ASSERT_GE(small.size(), 2u);
  EXPECT_LE(small.size(), 4u);
  EXPECT_EQ(small[0], 1);
  int calls = 0;
  for (int c : small) calls += c;
  EXPECT_GE(calls, 3);
  EXPECT_GE(calls * 50e-6 + small.size() * 0.5e-3, 0.025);
  // A 10 ms kernel: the first call alone, then the two more it takes to reach 25 ms.
  EXPECT_EQ(Warmup(p, 10e-3, 10e-3, 0), (std::vector<int>{1, 2}));
  // A slow first call (a lazy load) that covers the time: only the calls are missing.
  EXPECT_EQ(Warmup(p, 0.5, 1e-3, 0), (std::vector<int>{1, 2}));
  // Done is done.
  EXPECT_EQ(WarmupCalls(p, 3, 0.025), 0);
  EXPECT_EQ(WarmupCalls(p, 0, 0), 1);
}

}  // namespace
}  // namespace kope
