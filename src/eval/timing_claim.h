// The parent's clock as a bound on a candidate's reported times (internal to eval).
//
// A runner reports each timed call's kernel time; the parent sees only the wall time of the
// whole request. What a batch's wall time leaves unexplained by its reported kernel time is
// the runner's overhead (its loop, the round trip), the same for the candidate and a baseline
// served by the same kind of runner, given the same number of calls. A candidate that shares
// the timer's process (a ModelNew in the Python bridge) and changes what the timer reports
// leaves more unexplained: the time it hid. Pure functions; thread-safe.
#ifndef KOPE_SRC_EVAL_TIMING_CLAIM_H_
#define KOPE_SRC_EVAL_TIMING_CLAIM_H_

#include <optional>
#include <string>
#include <vector>

namespace kope {

// One pair of back-to-back batches without cache flushes, of `calls` calls each: the
// candidate's and the baseline's wall time as the parent saw it and kernel time as reported.
struct ClockPair {
  int calls = 0;
  double candidate_wall_s = 0;
  double candidate_kernel_s = 0;
  double baseline_wall_s = 0;
  double baseline_kernel_s = 0;
};

// How much of its batches' wall time a candidate may leave unexplained beyond the baseline's
// overhead: a share of its reported kernel time, and an allowance for noise per batch and per
// call; and, where its timed calls took s > 1 times the baseline's (the ratio of the medians
// the verdict is made of: no speedup), (s - 1) times the baseline's overhead, s at most
// kSlowerCpuLimit (a runner on a slower CPU, whose loop is slower too: host-bound calls of tens
// of microseconds spend a third of their wall time in the runner's loop). On the host (the CPU
// backend) a loaded machine's scheduling delays reach a tenth of a batch; on a GPU the timed calls
// are bracketed by device events and the two runners' loops differ by microseconds a call, so the
// bound is tighter there (a timer that reports 1/1.2 of the time hides a sixth of it).
struct ClockBound {
  double ratio = 0;
  double slack_seconds = 0;
  double slack_per_call_seconds = 0;
};
inline constexpr ClockBound kHostClockBound = {0.15, 2e-3, 0.5e-6};
inline constexpr ClockBound kDeviceClockBound = {0.05, 1e-3, 1.5e-6};
// The slowest a machine's CPU is taken to be against another of the same machine (the H200
// machine's virtual CPUs: 1.9x apart).
inline constexpr double kSlowerCpuLimit = 1.9;

// Each pair's candidate time unexplained beyond the baseline's overhead in its least delayed
// batch, as a share of the candidate's reported kernel time (the evidence HiddenTimeFinding
// judges).
std::vector<double> UnexplainedShares(const std::vector<ClockPair>& pairs);

// Why the candidate's reported times cannot be believed (in every batch, its least delayed
// included, the candidate's overhead beyond the baseline's least exceeds `bound`: a timer that
// reports less does so in every batch; a busy machine delays some, and only adds time outside
// a timer, so each side's least delayed batch is what its runner's loop costs), with the
// figures; nullopt where they agree with the parent's clock or fewer than two pairs were timed.
// `timed_ratio`: the candidate's median timed call over the baseline's.
std::optional<std::string> HiddenTimeFinding(const std::vector<ClockPair>& pairs,
                                             const ClockBound& bound = kHostClockBound,
                                             double timed_ratio = 1.0);

// Calls that left work on streams the harness's stream never waits on, from the runner's
// replies to TIME (a JSON note); the outcome's note where at least half of the calls did. A
// call the host was descheduled in, between the harness's stream finishing and the device-wide
// synchronize returning, looks like one such call: a candidate that launches work on a side
// stream does so in every call.
struct SideStreamTally {
  long calls = 0;
  long side_stream_calls = 0;
  double side_stream_s = 0;
  // Adds one reply of `reply_calls` calls and its message (a note where calls left work on
  // other streams; an empty or unrelated message adds only the calls).
  void Add(const std::string& reply_message, long reply_calls);
  std::optional<std::string> Note() const;
};

}  // namespace kope

#endif  // KOPE_SRC_EVAL_TIMING_CLAIM_H_
