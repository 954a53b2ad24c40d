#include "timing_claim.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kope {
namespace {

// A pair of batches of `calls` calls: the candidate's real time per call `real`, reported
// `real / fake`, and the same overhead per call and round trip for both runners.
ClockPair Pair(int calls, double real, double fake, double baseline, double overhead = 10e-6,
               double round_trip = 300e-6) {
  ClockPair p;
  p.calls = calls;
  p.candidate_wall_s = calls * (real + overhead) + round_trip;
  p.candidate_kernel_s = calls * real / fake;
  p.baseline_wall_s = calls * (baseline + overhead) + round_trip;
  p.baseline_kernel_s = calls * baseline;
  return p;
}

std::vector<ClockPair> Four(const ClockPair& p) { return {p, p, p, p}; }

// `p` with the candidate's runner on a CPU `s` times slower: its calls (host-bound, their time
// the host's launch) and its loop around them take s times as long.
ClockPair OnASlowerCpu(ClockPair p, double s) {
  const double overhead = p.candidate_wall_s - p.candidate_kernel_s;
  p.candidate_kernel_s *= s;
  p.candidate_wall_s = p.candidate_kernel_s + s * overhead;
  return p;
}

// `p` with time outside the timers added to the candidate's and the baseline's batch (a busy
// machine that descheduled the runner between calls).
ClockPair Delayed(ClockPair p, double candidate_s, double baseline_s) {
  p.candidate_wall_s += candidate_s;
  p.baseline_wall_s += baseline_s;
  return p;
}

struct ClaimCase {
  const char* name;
  std::vector<ClockPair> pairs;
  bool rejected;
  const ClockBound& bound = kHostClockBound;
  double timed_ratio = 1.0;  // the candidate's median timed call over the baseline's
};

TEST(HiddenTimeFinding, AClaimIsBoundedByTheParentsClock) {
  const ClaimCase cases[] = {
      {"honest, as fast as the baseline", Four(Pair(50, 2e-3, 1, 2e-3)), false},
      {"honest, ten times faster", Four(Pair(1000, 100e-6, 1, 1e-3)), false},
      {"honest, tiny calls", Four(Pair(10000, 2e-6, 1, 2e-6)), false},
      {"a timer that reports a tenth", Four(Pair(50, 2e-3, 10, 2e-3)), true},
      {"a timer that reports a 1.2x speedup", Four(Pair(50, 2e-3, 1.2, 2e-3)), true},
      {"a 1.2x fake of 30 us GPU calls", Four(Pair(3333, 30e-6, 1.2, 30e-6, 20e-6)), true},
      {"a 1.1x fake is within what is allowed", Four(Pair(50, 2e-3, 1.1, 2e-3)), false},
      {"one batch a busy machine delayed",
       {Pair(50, 2e-3, 1, 2e-3), Pair(50, 2.5e-3, 1.25, 2e-3), Pair(50, 2e-3, 1, 2e-3),
        Pair(50, 2e-3, 1, 2e-3)},
       false},
      {"a fake, one of whose baseline batches a busy machine delayed",
       {Pair(50, 2e-3, 1.2, 2e-3), Pair(50, 2e-3, 1.2, 2.5e-3), Pair(50, 2e-3, 1.2, 2e-3),
        Pair(50, 2e-3, 1.2, 2e-3)},
       true},
      {"a 1.2x fake, three of whose baseline batches a busy machine delayed",
       {Delayed(Pair(50, 2e-3, 1.2, 2e-3), 0, 10e-3), Delayed(Pair(50, 2e-3, 1.2, 2e-3), 0, 15e-3),
        Pair(50, 2e-3, 1.2, 2e-3), Delayed(Pair(50, 2e-3, 1.2, 2e-3), 0, 8e-3)},
       true},
      {"a 1.2x fake, every batch of both delayed, one of each the least",
       {Delayed(Pair(50, 2e-3, 1.2, 2e-3), 1e-3, 6e-3),
        Delayed(Pair(50, 2e-3, 1.2, 2e-3), 2e-3, 9e-3),
        Delayed(Pair(50, 2e-3, 1.2, 2e-3), 1e-3, 1e-3),
        Delayed(Pair(50, 2e-3, 1.2, 2e-3), 3e-3, 12e-3)},
       true},
      {"a 1.2x fake whose calls a busy machine slowed inside its timer",
       Four(Pair(50, 3e-3, 1.2, 2e-3)), true},
      {"a 1.2x fake of 25 us calls", Four(Pair(4000, 25e-6, 1.2, 25e-6, 2e-6)), true},
      // Reported slower than its baseline all the same (0.86x for 0.72x): what a runner on a
      // slower CPU may leave unexplained covers it, and it claims no speedup either way.
      {"a 1.2x fake of calls slower than the baseline's", Four(Pair(4000, 25e-6, 1.2, 18e-6, 2e-6)),
       false, kHostClockBound, 25.0 / 1.2 / 18},
      {"honest 25 us calls, three of whose batches a busy machine delayed",
       {Delayed(Pair(4000, 25e-6, 1, 18e-6, 2e-6), 20e-3, 0),
        Delayed(Pair(4000, 25e-6, 1, 18e-6, 2e-6), 25e-3, 1e-3), Pair(4000, 25e-6, 1, 18e-6, 2e-6),
        Delayed(Pair(4000, 25e-6, 1, 18e-6, 2e-6), 30e-3, 0)},
       false},
      {"one pair is too few to judge", {Pair(50, 2e-3, 10, 2e-3)}, false},
      // On a GPU: calls of 50 us with 30 us of loop around each (a ModelNew on a small problem).
      {"GPU: honest 50 us calls", Four(Pair(2000, 50e-6, 1, 50e-6, 31e-6)), false,
       kDeviceClockBound},
      {"GPU: honest 3 ms calls, one batch delayed by 5 ms",
       {Pair(33, 3e-3, 1, 3e-3), Pair(33, 3.15e-3, 1.05, 3e-3), Pair(33, 3e-3, 1, 3e-3),
        Pair(33, 3e-3, 1, 3e-3)},
       false,
       kDeviceClockBound},
      {"GPU: a 1.2x fake of 50 us calls", Four(Pair(2000, 50e-6, 1.2, 50e-6, 30e-6)), true,
       kDeviceClockBound},

      {"GPU: honest host-bound 35 us calls, the candidate's runner on a CPU a third slower",
       Four(OnASlowerCpu(Pair(2900, 35e-6, 1, 35e-6, 14e-6), 1.35)), false, kDeviceClockBound,
       1.35},
      {"GPU: a 1.2x fake of 50 us calls, its runner on a CPU a third slower",
       Four(OnASlowerCpu(Pair(2000, 50e-6, 1.2, 50e-6, 30e-6), 1.35)), true, kDeviceClockBound,
       1.35 / 1.2},
      // A fake that also spins inside its timer in one cross-check pair: that pair reports
      // slower than the baseline, but the evaluation's timed calls claim 1.2x.
      {"GPU: a 1.2x fake of 35 us calls, slow in one pair",
       {OnASlowerCpu(Pair(2900, 35e-6, 1.2, 35e-6, 14e-6), 1.45),
        Pair(2900, 35e-6, 1.2, 35e-6, 14e-6), Pair(2900, 35e-6, 1.2, 35e-6, 14e-6),
        Pair(2900, 35e-6, 1.2, 35e-6, 14e-6)},
       true,
       kDeviceClockBound,
       1 / 1.2},
      {"GPU: a 1.2x fake of 3 ms calls", Four(Pair(33, 3e-3, 1.2, 3e-3)), true, kDeviceClockBound},
      {"GPU: a 1.1x fake of 3 ms calls", Four(Pair(33, 3e-3, 1.1, 3e-3)), true, kDeviceClockBound},
      {"no pairs", {}, false},
  };
  for (const ClaimCase& c : cases) {
    const auto finding = HiddenTimeFinding(c.pairs, c.bound, c.timed_ratio);
    EXPECT_EQ(finding.has_value(), c.rejected) << c.name << ": " << finding.value_or("");
    if (finding) {
      EXPECT_NE(finding->find("no speedup"), std::string::npos) << *finding;
    }
  }
}

TEST(UnexplainedShares, AreTheHiddenTimeOverWhatWasReported) {
  const std::vector<double> shares = UnexplainedShares({Pair(50, 2e-3, 1.2, 2e-3)});
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_NEAR(shares[0], 0.2, 1e-9);
  // Beyond the baseline's least delayed batch, whichever pair it was timed in.
  const ClockPair honest = Pair(50, 2e-3, 1, 2e-3);
  const std::vector<double> two = UnexplainedShares({Delayed(honest, 0, 10e-3), honest});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_NEAR(two[0], 0, 1e-9);
  EXPECT_NEAR(two[1], 0, 1e-9);
  EXPECT_TRUE(UnexplainedShares({}).empty());
}

TEST(SideStreamTally, NotesOnlyWhereMostCallsLeftWork) {
  SideStreamTally tally;  // one call of many, a host descheduled at the wrong moment
  tally.Add(R"({"side_stream_calls": 1, "calls": 40, "side_stream_ns": 300000})", 40);
  tally.Add("", 40);
  EXPECT_FALSE(tally.Note().has_value());
  EXPECT_EQ(tally.side_stream_calls, 1);
}

TEST(SideStreamTally, NotesWhatTheRunnersReplySaid) {
  SideStreamTally tally;
  tally.Add("", 2);
  tally.Add("not a note", 1);
  EXPECT_FALSE(tally.Note().has_value());
  tally.Add(R"({"side_stream_calls": 4, "calls": 5, "side_stream_ns": 8000000})", 5);
  ASSERT_TRUE(tally.Note().has_value());
  EXPECT_EQ(tally.calls, 8);
  EXPECT_EQ(tally.side_stream_calls, 4);
  EXPECT_NE(tally.Note()->find("4 of 8 timed calls"), std::string::npos) << *tally.Note();
  EXPECT_NE(tally.Note()->find("2.000 ms a call"), std::string::npos) << *tally.Note();
}

}  // namespace
}  // namespace kope
