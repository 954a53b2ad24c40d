#include "kope/eval/timing.h"

#include <algorithm>
#include <cmath>

namespace kope {
namespace {

double Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) * (1 - frac) + static_cast<double>(sorted[hi]) * frac;
}

}  // namespace

TimingPolicy TimingPolicy::Screen() { return TimingPolicy{}; }

TimingPolicy TimingPolicy::Confirm() {
  TimingPolicy p;
  p.min_seconds = 0.5;
  p.max_seconds = 10.0;
  return p;
}

TimingSummary Summarize(const std::vector<int64_t>& ns) {
  TimingSummary s;
  if (ns.empty()) return s;
  std::vector<int64_t> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  double total = 0;
  for (int64_t v : sorted) total += static_cast<double>(v);
  s.samples = static_cast<int>(sorted.size());
  s.median_s = Percentile(sorted, 0.5) * 1e-9;
  s.p20_s = Percentile(sorted, 0.2) * 1e-9;
  s.p80_s = Percentile(sorted, 0.8) * 1e-9;
  s.min_s = static_cast<double>(sorted.front()) * 1e-9;
  s.measured_s = total * 1e-9;
  s.mean_s = s.measured_s / s.samples;
  s.spread = s.median_s > 0 ? (s.p80_s - s.p20_s) / s.median_s : 0;
  return s;
}

bool Converged(const TimingSummary& summary, const TimingPolicy& policy) {
  return summary.samples >= policy.min_samples && summary.measured_s >= policy.min_seconds &&
         summary.spread <= policy.max_spread;
}

int WarmupCalls(const TimingPolicy& policy, int calls, double seconds) {
  if (calls >= policy.warmup_calls && seconds >= policy.warmup_seconds) return 0;
  if (calls <= 0) return 1;
  const double per_call = std::max(seconds / calls, 1e-7);
  const double by_time = std::ceil((policy.warmup_seconds - seconds) / per_call);
  const double count = std::max(static_cast<double>(policy.warmup_calls - calls), by_time);
  return static_cast<int>(std::clamp(count, 1.0, 10000.0));
}

}  // namespace kope
