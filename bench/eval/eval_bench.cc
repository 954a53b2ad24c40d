// The evaluator's own cost: screening turnaround with a cold and a warm compile
// cache, and the overhead beyond kernel run time for a kernel of about 10 ms.
//
// Usage: eval_bench [repetitions]   (run from anywhere; prints a table)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.h"
#include "kope/backend/cpu/cpu_backend.h"
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"

namespace fs = std::filesystem;
using namespace kope;
using kope::bench::Median;
using kope::bench::Now;

namespace {

struct Run {
  double wall = 0;
  Outcome outcome;
};

Run EvaluateOnce(const fs::path& cache, const fs::path& task_dir, const fs::path& candidate) {
  CpuBackendOptions bopts;
  bopts.cache_dir = cache;
  auto backend = CreateCpuBackend(bopts);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    std::exit(1);
  }
  auto task = LoadTask(task_dir);
  if (!task.ok()) {
    std::fprintf(stderr, "%s\n", task.status().ToString().c_str());
    std::exit(1);
  }
  EvalOptions options;
  options.runner_exe = fs::path(KOPE_BINARY_DIR) / "kope-runner";
  Evaluator evaluator(**backend, options);
  double t0 = Now();
  auto outcome = evaluator.Evaluate(*task, ReadFileText(candidate).value_or(""),
                                    candidate.filename().string());
  Run run;
  run.wall = Now() - t0;
  if (!outcome.ok()) {
    std::fprintf(stderr, "%s\n", outcome.status().ToString().c_str());
    std::exit(1);
  }
  run.outcome = *outcome;
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  fs::path root = KOPE_SOURCE_DIR;
  fs::path scratch = fs::temp_directory_path() / ("kope-eval-bench-" + std::to_string(getpid()));
  fs::path warm_cache = scratch / "warm";

  // The hardware figures are measured once per machine; do that outside the timed runs.
  {
    CpuBackendOptions bopts;
    bopts.cache_dir = warm_cache;
    auto backend = CreateCpuBackend(bopts);
    if (backend.ok()) (void)(*backend)->Hardware();
  }

  // 1. Screening a small elementwise candidate (bench/eval/small): cold cache (a
  //    fresh folder with only the hardware figures copied; the baseline is compiled
  //    too), then warm.
  fs::path small = root / "bench/eval/small";
  std::vector<double> cold, warm, cold_compile;
  for (int r = 0; r < reps; ++r) {
    fs::path cache = scratch / ("cold" + std::to_string(r));
    fs::create_directories(cache);
    fs::copy(warm_cache / "hardware", cache / "hardware", fs::copy_options::recursive);
    Run c = EvaluateOnce(cache, small, small / "candidate.cc");
    cold.push_back(c.wall);
    cold_compile.push_back(c.outcome.compile_seconds);
    Run w = EvaluateOnce(cache, small, small / "candidate.cc");
    warm.push_back(w.wall);
    if (!c.outcome.valid() || !w.outcome.valid()) {
      std::fprintf(stderr, "unexpected verdict:\n%s", FormatOutcome(w.outcome).c_str());
      return 1;
    }
  }

  // 2. Overhead for a kernel of about 10 ms (warm cache): evaluation wall time
  //    beyond the time spent inside kernels (candidate, baseline and reference).
  fs::path spin = root / "bench/eval/spin10ms";
  EvaluateOnce(warm_cache, spin, spin / "kernel.cc");  // compile once
  std::vector<double> overhead, kernel_ms, eval_s, kernel_s;
  for (int r = 0; r < reps; ++r) {
    Run run = EvaluateOnce(warm_cache, spin, spin / "kernel.cc");
    const Outcome& o = run.outcome;
    overhead.push_back((o.eval_seconds - o.kernel_seconds) / o.kernel_seconds);
    kernel_ms.push_back(o.candidate_time ? o.candidate_time->median_s * 1e3 : 0);
    eval_s.push_back(o.eval_seconds);
    kernel_s.push_back(o.kernel_seconds);
  }
  fs::remove_all(scratch);

  std::printf("%-52s %10s\n", "measure (median of runs)", "value");
  std::printf("%-52s %10d\n", "runs", reps);
  std::printf("%-52s %9.3fs\n", "screen a small candidate, cold compile cache", Median(cold));
  std::printf("%-52s %9.3fs\n", "  of which compiling the candidate", Median(cold_compile));
  std::printf("%-52s %9.3fs\n", "screen a small candidate, warm compile cache", Median(warm));
  std::printf("%-52s %9.2fms\n", "spin10ms kernel median", Median(kernel_ms));
  std::printf("%-52s %9.3fs\n", "spin10ms evaluation wall time", Median(eval_s));
  std::printf("%-52s %9.3fs\n", "spin10ms time inside kernels (all runners)", Median(kernel_s));
  std::printf("%-52s %9.1f%%\n", "overhead beyond kernel time ((wall-kernel)/kernel)",
              100 * Median(overhead));
  return 0;
}
