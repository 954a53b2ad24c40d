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

double Percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}

// Noise: the widest spread of the measurement. Within it, or with a fifth of the rounds or more
// on each side of 1, candidate and baseline are not told apart; beyond kNoisyMachineSpread the
// machine was too busy for any small difference to mean something. On such a machine the margin
// is twice the noise: two processes doing identical work drift apart by more than their spread
// when the load favours one of them for the whole measurement (rounds interleave calls, not the
// processes' standing), and identical ModelNews on a 2-core machine under load came out at
// 1.71x (noise 49%) and 1.76x (noise 67%).
void NoiseOf(Outcome& outcome) {
  const TimingSummary& c = *outcome.candidate_time;
  const TimingSummary& b = *outcome.baseline_time;
  const std::optional<RoundSpeedups>& rounds = outcome.round_speedups;
  double noise = std::max(c.spread, b.spread);
  if (rounds) noise = std::max(noise, rounds->spread);
  outcome.timing_noise = noise;
  const bool both_sides =
      rounds && std::min(rounds->faster, rounds->slower) >= std::max(1, rounds->rounds / 5);
  const bool noisy = noise > kNoisyMachineSpread;
  const double margin = noisy ? 2 * noise : noise;
  if (std::fabs(outcome.speedup - 1.0) <= margin || both_sides) {
    outcome.flags.emplace_back(kFlagWithinNoise);
  }
  if (noisy) outcome.flags.emplace_back(kFlagNoisyMachine);
}

// A ModelNew shares its timer's process: its speedups are the ones the parent's clock allows.
// The least unexplained share of the pairs is time every batch spent outside the reported
// times beyond the baseline's overhead; on a busy machine it is load, and dividing an honest
// speedup by it only understates it. Below half a percent it is the clocks' own resolution.
constexpr double kClockBoundThreshold = 0.005;

void BoundByClock(Outcome& outcome) {
  if (!outcome.clock_check || outcome.clock_check->unexplained_share.empty()) return;
  const std::vector<double>& shares = outcome.clock_check->unexplained_share;
  const double least = *std::min_element(shares.begin(), shares.end());
  if (least < kClockBoundThreshold) return;
  outcome.clock_check->speedup_divisor = 1 + least;
  outcome.speedup /= 1 + least;
  outcome.speedup_over_compiled /= 1 + least;
  outcome.flags.emplace_back(kFlagClockBounded);
}

}  // namespace

std::optional<RoundSpeedups> SummarizeRounds(const std::vector<double>& baseline_batch_s,
                                             const std::vector<double>& candidate_batch_s) {
  std::vector<double> ratios;
  for (size_t i = 0; i < std::min(baseline_batch_s.size(), candidate_batch_s.size()); ++i) {
    if (candidate_batch_s[i] > 0) ratios.push_back(baseline_batch_s[i] / candidate_batch_s[i]);
  }
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  RoundSpeedups r;
  r.rounds = static_cast<int>(ratios.size());
  for (double ratio : ratios) {
    r.faster += ratio > 1.0;
    r.slower += ratio < 1.0;
  }
  r.median = Percentile(ratios, 0.5);
  r.spread = r.median > 0 ? (Percentile(ratios, 0.8) - Percentile(ratios, 0.2)) / r.median : 0;
  return r;
}

void DecideTiming(const Task& task, const SizeSet& bench, double fastest_verified_s,
                  double shortest_judged_s, Outcome& outcome) {
  const TimingSummary& c = *outcome.candidate_time;
  const TimingSummary& b = *outcome.baseline_time;
  outcome.speedup = c.median_s > 0 ? b.median_s / c.median_s : 0;
  if (outcome.compiled_time && c.median_s > 0) {
    outcome.speedup_over_compiled = outcome.compiled_time->median_s / c.median_s;
  }
  BoundByClock(outcome);
  RooflineOf(task, bench, outcome);
  if (outcome.speedup > 10) outcome.flags.emplace_back(kFlagSpeedupAbove10x);
  if (c.spread > 0.05 || b.spread > 0.05) outcome.flags.emplace_back(kFlagUnstableTiming);
  NoiseOf(outcome);
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
