// The Python bridge's overhead per candidate, on KernelBench problems.
//
//   kernelbench_bench [--backend cpu|cuda] [--repeat N] PROBLEM.py CANDIDATE [PROBLEM CANDIDATE
//   ...]
//
// Each problem gets a fresh runner pool, as an optimization episode does, and its candidate is
// evaluated N times in a row (default 3): the first evaluation starts every runner (PyTorch's
// import, CUDA contexts, the torch.compile reference point's compile); the next ones find the
// task's runners loaded and the candidate's runner started ahead. A candidate is a native
// kernel (.cc/.cu, compiled once, then cached) or a KernelBench ModelNew file (.py).
// Per evaluation: the verdict, wall time, and the time waited on bridge processes beyond their
// kernels' own time, by request. Prints one table; every figure is measured here.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.h"
#include "kope/backend/cpu/cpu_backend.h"
#include "kope/backend/cuda/cuda_backend.h"
#include "kope/eval/evaluator.h"
#include "kope/torch_bridge/bridge.h"

namespace fs = std::filesystem;
using namespace kope;
using kope::bench::Median;
using kope::bench::ReadAll;

namespace {

double Request(const Outcome& o, const char* request) {
  auto it = o.bridge_overhead_by_request.find(request);
  return it == o.bridge_overhead_by_request.end() ? 0 : it->second;
}

int Usage() {
  std::fprintf(stderr,
               "usage: kernelbench_bench [--backend cpu|cuda] [--repeat N] PROBLEM.py CANDIDATE "
               "[PROBLEM.py CANDIDATE ...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend_name = "cuda";
  int repeat = 3;
  std::vector<std::pair<fs::path, fs::path>> pairs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend_name = argv[++i];
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(2, std::atoi(argv[++i]));
    } else if (i + 1 < argc) {
      pairs.emplace_back(argv[i], argv[i + 1]);
      ++i;
    } else {
      return Usage();
    }
  }
  if (pairs.empty()) return Usage();
  const fs::path cache = fs::temp_directory_path() / "kope-kernelbench-bench-cache";
  Result<std::unique_ptr<Backend>> backend = Status::InvalidArgument("unknown backend");
  if (backend_name == "cuda") {
    CudaBackendOptions options;
    options.cache_dir = cache;
    backend = CreateCudaBackend(options);
  } else if (backend_name == "cpu") {
    CpuBackendOptions options;
    options.cache_dir = cache;
    backend = CreateCpuBackend(options);
  }
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }

  struct Row {
    std::string problem, candidate;
    Outcome first;
    std::vector<Outcome> next;
  };
  std::vector<Row> rows;
  for (const auto& [problem, candidate] : pairs) {
    Result<Task> task = LoadTaskOrProblem(problem);
    if (!task.ok()) {
      std::fprintf(stderr, "%s: %s\n", problem.c_str(), task.status().ToString().c_str());
      return 1;
    }
    RunnerPoolOptions pool_options;
    pool_options.spares = true;
    EvalOptions options;
    options.runner_exe = fs::path(KOPE_BINARY_DIR) / "kope-runner";
    options.pool = std::make_shared<RunnerPool>(pool_options);
    Evaluator evaluator(**backend, options);
    const std::string source = ReadAll(candidate);
    Row row{problem.stem().string(), candidate.filename().string(), {}, {}};
    for (int r = 0; r < repeat; ++r) {
      Result<Outcome> o = evaluator.Evaluate(*task, source, candidate.filename().string());
      if (!o.ok()) {
        std::fprintf(stderr, "%s: %s\n", problem.c_str(), o.status().ToString().c_str());
        return 1;
      }
      std::printf(
          "%s %s #%d: %s, %.1f s, bridge %.3f s (load %.3f map %.3f call %.3f time %.3f), "
          "reused %d, spares %d, compile %.3f s\n",
          row.problem.c_str(), row.candidate.c_str(), r + 1, VerdictName(o->verdict).data(),
          o->eval_seconds, o->bridge_overhead_seconds, Request(*o, "load"), Request(*o, "map"),
          Request(*o, "call"), Request(*o, "time"), o->runners_reused, o->runners_from_spares,
          o->compile_seconds);
      std::fflush(stdout);
      (r == 0 ? row.first : row.next.emplace_back()) = *o;
    }
    rows.push_back(std::move(row));
  }

  std::printf("\n%-36s %-14s %-8s %9s %9s %9s %9s %9s %7s\n", "problem", "candidate", "verdict",
              "eval s", "first s", "next s", "next load", "next map", "target");
  for (const Row& row : rows) {
    std::vector<double> next, next_load, next_map, next_eval;
    bool valid = row.first.valid();
    for (const Outcome& o : row.next) {
      next.push_back(o.bridge_overhead_seconds);
      next_load.push_back(Request(o, "load"));
      next_map.push_back(Request(o, "map"));
      next_eval.push_back(o.eval_seconds);
      valid = valid && o.valid();
    }
    std::printf("%-36s %-14s %-8s %9.1f %9.3f %9.3f %9.3f %9.3f %7s\n", row.problem.c_str(),
                row.candidate.c_str(), valid ? "valid" : "NOT", Median(next_eval),
                row.first.bridge_overhead_seconds, Median(next), Median(next_load),
                Median(next_map), Median(next) <= 0.5 ? "met" : "missed");
  }
  std::printf(
      "(bridge overhead: time waited on PyTorch bridge processes beyond their kernels' "
      "own time; first = first evaluation of the problem, next = median of the "
      "following %d)\n",
      repeat - 1);
  return 0;
}
