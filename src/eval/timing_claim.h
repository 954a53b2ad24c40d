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

// The share of the candidate's reported kernel time it may leave unexplained beyond the
// baseline's overhead, and the allowance for noise: per batch and per call.
inline constexpr double kHiddenTimeRatio = 0.15;
inline constexpr double kHiddenTimeSlackSeconds = 2e-3;  // a busy machine's round trips
inline constexpr double kHiddenTimeSlackPerCallSeconds = 0.5e-6;

// Why the candidate's reported times cannot be believed (in all pairs but one at most, the
// candidate's overhead beyond the baseline's exceeds kHiddenTimeRatio of its reported kernel
// time plus the slack: a timer that reports less does so in every batch, a busy machine
// delays some), with the figures; nullopt where they agree with the parent's clock or fewer
// than two pairs were timed.
std::optional<std::string> HiddenTimeFinding(const std::vector<ClockPair>& pairs);

// Calls that left work on streams the harness's stream never waits on, from the runner's
// replies to TIME (a JSON note); the outcome's note where there were any.
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
