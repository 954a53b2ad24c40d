// Small helpers the benchmarks share: a median, a monotonic clock.
#ifndef KOPE_BENCH_BENCH_SUPPORT_H_
#define KOPE_BENCH_BENCH_SUPPORT_H_

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace kope::bench {

// The upper median; 0 for no values.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds on the steady clock.
inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace kope::bench

#endif  // KOPE_BENCH_BENCH_SUPPORT_H_
