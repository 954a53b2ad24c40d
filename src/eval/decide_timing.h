// DecideTiming: the speedups, the roofline and the flags of a valid candidate, from its timing
// (internal to the evaluator). A pure function of its arguments.
#ifndef KOPE_SRC_EVAL_DECIDE_TIMING_H_
#define KOPE_SRC_EVAL_DECIDE_TIMING_H_

#include <optional>
#include <vector>

#include "kope/eval/outcome.h"
#include "kope/task/task.h"

namespace kope {

// Timed calls faster than this share of the fastest verified call are flagged.
inline constexpr double kTimedVerifiedRatio = 0.2;

// The per-round speedups of an interleaved timing: baseline_batch_s[i] / candidate_batch_s[i],
// the median time per call of each track's i-th batch (rounds beyond the shorter list are left
// out). Absent without a round of both.
std::optional<RoundSpeedups> SummarizeRounds(const std::vector<double>& baseline_batch_s,
                                             const std::vector<double>& candidate_batch_s);

// Fills `outcome`'s speedups, roofline fractions and flags from its candidate_time and
// baseline_time (both set) at `bench`, its round_speedups (where set) and its hardware.
// `fastest_verified_s`: the candidate's fastest verified call at the bench size, judged against the
// timed median from `shortest_judged_s` up (KernelKind::shortest_judged_seconds).
void DecideTiming(const Task& task, const SizeSet& bench, double fastest_verified_s,
                  double shortest_judged_s, Outcome& outcome);

}  // namespace kope

#endif  // KOPE_SRC_EVAL_DECIDE_TIMING_H_
