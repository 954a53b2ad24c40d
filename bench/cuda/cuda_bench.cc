// The CUDA backend's turnaround and timing quality, on a machine with a GPU.
//
//   cuda_bench turnaround [reps]
//       screen bench/cuda/small/candidate.cu: cold compile cache (a fresh folder holding
//       only the cached hardware figures; the baseline is compiled before the clock starts,
//       as it is once per session) and warm, median of reps; the first candidate of a session
//       apart from the next ones (which find the task's runner loaded and their own started)
//   cuda_bench throughput [candidates] [compile_workers]
//       distinct small candidates compiled by a pool of workers while one thread evaluates
//       them in order: candidates per minute
//   cuda_bench stability TASK CANDIDATE [runs]
//       the same candidate evaluated `runs` times (warm cache): each run's median, the spread
//       of the medians run to run, and Nsight Compute's gpu__time_duration for one call
//
// Prints a table; numbers are measurements of this machine, nothing is assumed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "kope/backend/cuda/cuda_backend.h"
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"

namespace fs = std::filesystem;
using namespace kope;
using kope::bench::Median;
using kope::bench::Now;

namespace {

std::unique_ptr<Backend> MakeBackend(const fs::path& cache) {
  CudaBackendOptions options;
  options.cache_dir = cache;
  auto backend = CreateCudaBackend(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(backend).value();
}

Task MustLoad(const fs::path& dir) {
  auto task = LoadTask(dir);
  if (!task.ok()) {
    std::fprintf(stderr, "%s\n", task.status().ToString().c_str());
    std::exit(1);
  }
  return *task;
}

EvalOptions Options() {
  EvalOptions options;
  options.runner_exe = fs::path(KOPE_BINARY_DIR) / "kope-runner";
  return options;
}

Outcome MustEvaluate(Evaluator& evaluator, const Task& task, const std::string& source,
                     const std::string& name) {
  auto outcome = evaluator.Evaluate(task, source, name);
  if (!outcome.ok()) {
    std::fprintf(stderr, "%s\n", outcome.status().ToString().c_str());
    std::exit(1);
  }
  return *outcome;
}

// A variant of the candidate that compiles to a different cache entry.
std::string Variant(const std::string& source, int i) {
  return source + "\n// variant " + std::to_string(i) + " " + std::to_string(getpid()) + "\n";
}

// A runner pool as an optimization episode uses one: the task's runners stay loaded, the next
// candidate's runner starts ahead.
std::shared_ptr<RunnerPool> EpisodePool() {
  RunnerPoolOptions options;
  options.spares = true;
  return std::make_shared<RunnerPool>(options);
}

int Turnaround(int reps) {
  const fs::path root = KOPE_SOURCE_DIR;
  const fs::path scratch =
      fs::temp_directory_path() / ("kope-cuda-bench-" + std::to_string(getpid()));
  const fs::path warm = scratch / "warm";
  const fs::path small = root / "bench/cuda/small";
  const Task task = MustLoad(small);
  const std::string candidate = ReadFileText(small / "candidate.cu").value_or("");
  const std::string baseline = ReadFileText(small / "baseline.cu").value_or("");
  {
    auto backend = MakeBackend(warm);
    if (auto hw = backend->Hardware(); !hw.ok()) {
      std::fprintf(stderr, "%s\n", hw.status().ToString().c_str());
      return 1;
    }
  }
  // Each run: a fresh compile cache (only the hardware figures and the baseline in it), the
  // first candidate of a session (no runner started yet), then the next distinct candidates
  // (cold compile each; the task's runner kept, the candidate's runner started ahead), then
  // one of them again (warm compile cache).
  std::vector<double> first, first_compile, cold, cold_compile, warm_wall;
  std::map<std::string, std::vector<double>> cold_phases;  // next candidates, by phase
  for (int r = 0; r < reps; ++r) {
    const fs::path cache = scratch / ("cold" + std::to_string(r));
    fs::create_directories(cache);
    fs::copy(warm / "hardware", cache / "hardware", fs::copy_options::recursive);
    auto backend = MakeBackend(cache);
    (void)backend->Compile(baseline, "baseline.cu");  // once per session, not per candidate
    EvalOptions options = Options();
    options.pool = EpisodePool();
    Evaluator evaluator(*backend, options);
    std::vector<Outcome> outcomes;
    for (int k = 0; k < 4; ++k) {
      const std::string source = Variant(candidate, r * 100 + k);
      double t0 = Now();
      outcomes.push_back(MustEvaluate(evaluator, task, source, "candidate.cu"));
      const double wall = Now() - t0;
      (k == 0 ? first : cold).push_back(wall);
      (k == 0 ? first_compile : cold_compile).push_back(outcomes.back().compile_seconds);
      if (k > 0) {
        for (const auto& [name, seconds] : outcomes.back().phase_seconds) {
          cold_phases[name].push_back(seconds);
        }
      }
    }
    double t0 = Now();
    outcomes.push_back(
        MustEvaluate(evaluator, task, Variant(candidate, r * 100 + 3), "candidate.cu"));
    warm_wall.push_back(Now() - t0);
    for (const Outcome& o : outcomes) {
      if (!o.valid()) {
        std::fprintf(stderr, "unexpected verdict:\n%s", FormatOutcome(o).c_str());
        return 1;
      }
    }
  }
  fs::remove_all(scratch);
  std::printf("%-60s %10s\n", "turnaround (median)", "value");
  std::printf("%-60s %10d\n", "runs (each: 1 first + 3 next candidates + 1 warm)", reps);
  std::printf("%-60s %9.3fs\n", "first candidate of a session, cold compile cache", Median(first));
  std::printf("%-60s %9.3fs\n", "  of which nvcc (overlapped with runner start)",
              Median(first_compile));
  std::printf("%-60s %9.3fs\n", "next candidates, cold compile cache", Median(cold));
  std::printf("%-60s %9.3fs\n", "  of which nvcc", Median(cold_compile));
  for (const auto& [name, seconds] : cold_phases) {
    std::printf("%-60s %9.3fs\n", ("  phase " + name).c_str(), Median(seconds));
  }
  std::printf("%-60s %9.3fs\n", "next candidate, warm compile cache", Median(warm_wall));
  return 0;
}

int Throughput(int count, int workers) {
  const fs::path root = KOPE_SOURCE_DIR;
  const fs::path cache = fs::temp_directory_path() / ("kope-cuda-tp-" + std::to_string(getpid()));
  const fs::path small = root / "bench/cuda/small";
  const Task task = MustLoad(small);
  const std::string candidate = ReadFileText(small / "candidate.cu").value_or("");
  auto backend = MakeBackend(cache);
  if (auto hw = backend->Hardware(); !hw.ok()) return 1;
  (void)backend->Compile(ReadFileText(small / "baseline.cu").value_or(""), "baseline.cu");

  // Workers compile ahead; the evaluating thread takes candidates in order (each one's
  // Evaluate then finds its artifact in the cache).
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> compiled(static_cast<size_t>(count), false);
  int next = 0;
  std::vector<std::thread> pool;
  const double start = Now();
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      while (true) {
        int i;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (next >= count) return;
          i = next++;
        }
        (void)backend->Compile(Variant(candidate, i), "candidate.cu");
        std::lock_guard<std::mutex> lock(mu);
        compiled[static_cast<size_t>(i)] = true;
        cv.notify_all();
      }
    });
  }
  EvalOptions options = Options();
  options.pool = EpisodePool();
  Evaluator evaluator(*backend, options);
  int valid = 0;
  for (int i = 0; i < count; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return compiled[static_cast<size_t>(i)]; });
    }
    Outcome o = MustEvaluate(evaluator, task, Variant(candidate, i), "candidate.cu");
    valid += o.valid() ? 1 : 0;
  }
  const double wall = Now() - start;
  for (auto& t : pool) t.join();
  fs::remove_all(cache);
  std::printf("%-56s %10s\n", "throughput", "value");
  std::printf("%-56s %10d\n", "candidates (all distinct, cold compile)", count);
  std::printf("%-56s %10d\n", "compile workers", workers);
  std::printf("%-56s %10d\n", "valid", valid);
  std::printf("%-56s %9.1fs\n", "wall time", wall);
  std::printf("%-56s %10.1f\n", "candidates per minute", 60.0 * count / wall);
  return valid == count ? 0 : 1;
}

int Stability(const fs::path& task_dir, const fs::path& candidate_path, int runs) {
  const fs::path cache = fs::temp_directory_path() / ("kope-cuda-st-" + std::to_string(getpid()));
  const Task task = MustLoad(task_dir);
  const std::string source = ReadFileText(candidate_path).value_or("");
  auto backend = MakeBackend(cache);
  EvalOptions options = Options();
  std::vector<double> medians, spreads, base_medians;
  Outcome last;
  for (int r = 0; r < runs; ++r) {
    options.profile = r == runs - 1;
    Evaluator evaluator(*backend, options);
    last = MustEvaluate(evaluator, task, source, candidate_path.filename().string());
    if (!last.valid()) {
      std::fprintf(stderr, "%s", FormatOutcome(last).c_str());
      return 1;
    }
    medians.push_back(last.candidate_time->median_s);
    spreads.push_back(last.candidate_time->spread);
    base_medians.push_back(last.baseline_time->median_s);
  }
  fs::remove_all(cache);
  const double lo = *std::min_element(medians.begin(), medians.end());
  const double hi = *std::max_element(medians.begin(), medians.end());
  const double med = Median(medians);
  std::printf("%-56s %12s\n",
              ("stability: " + task.name + " " + candidate_path.filename().string()).c_str(),
              "value");
  for (int r = 0; r < runs; ++r) {
    std::printf("  run %d median %10.2f us  (p80-p20)/median %5.2f%%  baseline %10.2f us\n", r + 1,
                medians[r] * 1e6, 100 * spreads[r], base_medians[r] * 1e6);
  }
  std::printf("%-56s %10.2f us\n", "median of run medians", med * 1e6);
  std::printf("%-56s %10.2f %%\n", "run-to-run spread (max-min)/median", 100 * (hi - lo) / med);
  if (last.roofline_fraction) {
    std::printf("%-56s %10.1f %%\n", "of the roofline floor", 100 * *last.roofline_fraction);
    std::printf("%-56s %10.2f us\n", "roofline floor", *last.roofline_floor_s * 1e6);
  }
  std::printf("%-56s %10.3f TB/s\n", "roofline bandwidth (measured)",
              last.hardware.bandwidth_bytes_per_s * 1e-12);
  if (last.profile) {
    std::map<std::string, double> m(last.profile->metrics.begin(), last.profile->metrics.end());
    if (m.count("duration_ns")) {
      const double ncu = m["duration_ns"] * 1e-9;
      std::printf("%-56s %10.2f us\n", "ncu gpu__time_duration.sum (one call)", ncu * 1e6);
      std::printf("%-56s %10.2f %%\n", "kope median vs ncu", 100 * (med - ncu) / ncu);
    } else {
      std::printf("ncu: %s\n", last.profile->note.c_str());
    }
    std::printf("%s", FormatOutcome(last).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!CudaDevicePresent()) {
    std::fprintf(stderr, "cuda_bench: no CUDA GPU here\n");
    return 1;
  }
  if (mode == "turnaround") return Turnaround(argc > 2 ? std::atoi(argv[2]) : 5);
  if (mode == "throughput") {
    return Throughput(argc > 2 ? std::atoi(argv[2]) : 30, argc > 3 ? std::atoi(argv[3]) : 4);
  }
  if (mode == "stability" && argc >= 4) {
    return Stability(argv[2], argv[3], argc > 4 ? std::atoi(argv[4]) : 5);
  }
  std::fprintf(stderr,
               "usage: cuda_bench turnaround [reps] | throughput [n] [workers] | "
               "stability TASK CANDIDATE [runs]\n");
  return 2;
}
