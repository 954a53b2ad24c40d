// Timing statistics and the rule that decides when enough samples are in.
//
// Screen quickly, confirm carefully (EVALUATION.md): a measurement stops when
// it has at least `min_samples` samples and `min_seconds` of measured time and
// its relative spread (p80 - p20) / median is at most `max_spread`, or when
// `max_seconds` of wall time have passed. Pure values; thread-safe.
#ifndef KOPE_EVAL_TIMING_H_
#define KOPE_EVAL_TIMING_H_

#include <cstdint>
#include <vector>

namespace kope {

struct TimingPolicy {
  int warmup_calls = 3;
  double warmup_seconds = 0.025;
  int min_samples = 10;
  double min_seconds = 0.1;
  double max_spread = 0.005;
  double max_seconds = 0.4;  // wall time for baseline and candidate together
  bool flush_caches = true;
  int rotation_sets = 4;  // input sets rotated between calls (bounded by memory)

  // For screening candidates: the defaults above.
  static TimingPolicy Screen();
  // For confirming a new best: at least 0.5 s of samples each, up to 10 s.
  static TimingPolicy Confirm();
};

struct TimingSummary {
  int samples = 0;
  double median_s = 0;
  double p20_s = 0;
  double p80_s = 0;
  double mean_s = 0;
  double min_s = 0;
  double spread = 0;      // (p80 - p20) / median
  double measured_s = 0;  // sum of the samples
};

// Summary of per-call times in nanoseconds (empty input gives samples = 0).
TimingSummary Summarize(const std::vector<int64_t>& ns);

// Whether `summary` satisfies the policy's sample, time and spread rules.
bool Converged(const TimingSummary& summary, const TimingPolicy& policy);

// How many calls the next warm-up request makes, after `calls` calls that took `seconds` of
// wall time (round trips included); 0 once the warm-up has at least `warmup_calls` calls and
// `warmup_seconds`. The first call goes alone (it tells the time per call, and may be slow:
// a first launch, a lazy load); the rest goes in as few requests as the time per call so far
// allows, instead of one request per call.
int WarmupCalls(const TimingPolicy& policy, int calls, double seconds);

}  // namespace kope

#endif  // KOPE_EVAL_TIMING_H_
