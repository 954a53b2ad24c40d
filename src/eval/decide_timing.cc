#include "decide_timing.h"

#include <algorithm>
#include <cmath>

namespace kope {
namespace {

// The task's bytes and flops at the bench sizes, where it declares them.
void RooflineOf(const Task& task, const SizeSet& bench, Outcome& outcome) {
  const TimingSummary& c = *outcome.candidate_time;
  const TimingSummary& b = *outcome.baseline_time;
  std::optional<double> bytes, flops;
  if (task.bytes) {
    auto v = task.bytes->Evaluate(bench.sizes);
    if (v.ok()) bytes = static_cast<double>(*v);
  }
  if (task.flops) {
    auto v = task.flops->Evaluate(bench.sizes);
    if (v.ok()) flops = static_cast<double>(*v);
  }
  outcome.roofline_floor_s = RooflineFloorSeconds(outcome.hardware, bytes, flops);
  if (outcome.roofline_floor_s && c.median_s > 0) {
    outcome.roofline_fraction = *outcome.roofline_floor_s / c.median_s;
    outcome.baseline_roofline_fraction = *outcome.roofline_floor_s / b.median_s;
    // Faster than physics is a measurement or correctness error (2% for the floor's own error).
    if (c.median_s < 0.98 * *outcome.roofline_floor_s) {
      outcome.flags.emplace_back(kFlagFasterThanRoofline);
    }
  }
}

}  // namespace

void DecideTiming(const Task& task, const SizeSet& bench, double fastest_verified_s,
                  double shortest_judged_s, Outcome& outcome) {
  const TimingSummary& c = *outcome.candidate_time;
  const TimingSummary& b = *outcome.baseline_time;
  outcome.speedup = c.median_s > 0 ? b.median_s / c.median_s : 0;
  if (outcome.compiled_time && c.median_s > 0) {
    outcome.speedup_over_compiled = outcome.compiled_time->median_s / c.median_s;
  }
  RooflineOf(task, bench, outcome);
  if (outcome.speedup > 10) outcome.flags.emplace_back(kFlagSpeedupAbove10x);
  if (c.spread > 0.05 || b.spread > 0.05) outcome.flags.emplace_back(kFlagUnstableTiming);
  // A difference inside the spread of the measurements themselves is noise.
  double noise = std::max(c.spread, b.spread);
  if (std::fabs(outcome.speedup - 1.0) <= noise) outcome.flags.emplace_back(kFlagWithinNoise);
  // A kernel that can tell its verified calls from its timed ones (a ModelNew shares the
  // harness's Python process) may do its work only when checked. Its fastest verified call
  // bounds what a timed call can take (timed calls also have their caches flushed), but an
  // isolated call also pays for its start: a cold interpreter and caches, a GPU launch, CPU
  // threads waking up on a busy machine. Hence a wide margin, and calls long enough for their
  // start to be small: the kind's floor is 200 us of device time for a native kernel on a GPU,
  // 1 ms where the clock also counts the host's delays (on the CPU, and for a ModelNew on a
  // GPU, whose Python launch is inside its timed region).
  if (fastest_verified_s >= shortest_judged_s &&
      c.median_s < kTimedVerifiedRatio * fastest_verified_s) {
    outcome.flags.emplace_back(kFlagTimedFasterThanVerified);
  }
}

}  // namespace kope
