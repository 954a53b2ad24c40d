// The Python bridge's overhead per candidate, on KernelBench problems.
//
//   kernelbench_bench [--backend cpu|cuda] [--repeat N] [--pool-per-problem]
//                     (PROBLEM.py CANDIDATE ... | --candidate CANDIDATE PROBLEM.py ...)
//
// The problems are evaluated in order with one runner pool, as `kope bench` does for a suite
// (spares for the next task: the next problem's processes import PyTorch and start CUDA
// during this one); --pool-per-problem gives each problem a fresh pool, as a lone
// optimization episode has. Each problem's candidate is evaluated N times in a row (default 3):
// the first evaluation starts the problem's runners (or takes them from the spares) and
// compiles its torch.compile reference point; the next ones find them loaded. A candidate is a
// native kernel (.cc/.cu, compiled once, then cached) or a KernelBench ModelNew file (.py);
// with --candidate, one candidate for every problem.
// Per evaluation: the verdict, wall time, and the time waited on bridge processes beyond their
// kernels' own time, by request, and the problem's bytes per call (inputs, parameters and
// outputs at its bench size). A problem that cannot be evaluated is reported and skipped.
// Prints one table and a summary, over all problems and by bytes per call; every figure is
// measured here. bench/kernelbench/summarize.py makes the same summary, and the rows as a
// Markdown table, from one or more of these reports (the shards of sweep.sh), cut short or not.
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
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"
#include "kope/task/dtype.h"
#include "kope/task/task.h"
#include "kope/torch_bridge/bridge.h"

namespace fs = std::filesystem;
using namespace kope;
using kope::bench::Median;

namespace {

double Request(const Outcome& o, const char* request) {
  auto it = o.bridge_overhead_by_request.find(request);
  return it == o.bridge_overhead_by_request.end() ? 0 : it->second;
}

// Bytes one call reads and writes: every input (parameters included) and output at the bench
// size of `language`, in GB.
double GigabytesPerCall(const Task& task, std::string_view language) {
  const SizeSet& sizes = BenchSizes(task, language);
  double bytes = 0;
  for (const auto* list : {&task.inputs, &task.outputs}) {
    for (const TensorSpec& t : *list) {
      Result<std::vector<int64_t>> shape = ResolveShape(t, sizes);
      if (!shape.ok()) return 0;
      double n = static_cast<double>(DTypeSize(t.dtype));
      for (int64_t d : *shape) n *= static_cast<double>(d);
      bytes += n;
    }
  }
  return bytes * 1e-9;
}

// " flags a b," or "" (a false alarm on an honest candidate shows here).
std::string FlagsText(const Outcome& o) {
  if (o.flags.empty()) return "";
  std::string text = " flags";
  for (const std::string& f : o.flags) text += " " + f;
  return text + ",";
}

// The bands of bytes per call the figures are reported by (docs/PERFORMANCE.md).
constexpr double kBandEdges[] = {1.3, 4.4, 9.0};

int Usage() {
  std::fprintf(stderr,
               "usage: kernelbench_bench [--backend cpu|cuda] [--repeat N] [--pool-per-problem] "
               "(PROBLEM.py CANDIDATE ... | --candidate CANDIDATE PROBLEM.py ...)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend_name = "cuda";
  int repeat = 3;
  bool pool_per_problem = false;
  fs::path common_candidate;
  std::vector<fs::path> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend_name = argv[++i];
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(2, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--candidate") == 0 && i + 1 < argc) {
      common_candidate = argv[++i];
    } else if (std::strcmp(argv[i], "--pool-per-problem") == 0) {
      pool_per_problem = true;
    } else if (argv[i][0] == '-') {
      return Usage();
    } else {
      positional.emplace_back(argv[i]);
    }
  }
  std::vector<std::pair<fs::path, fs::path>> pairs;
  if (!common_candidate.empty()) {
    for (const fs::path& p : positional) pairs.emplace_back(p, common_candidate);
  } else {
    if (positional.size() % 2 != 0) return Usage();
    for (size_t i = 0; i < positional.size(); i += 2) {
      pairs.emplace_back(positional[i], positional[i + 1]);
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
    double gigabytes = 0;
    Outcome first;
    std::vector<Outcome> next;
  };
  std::vector<Row> rows;
  std::vector<std::string> skipped;
  auto make_pool = [] {
    RunnerPoolOptions pool_options;
    pool_options.spares = true;
    pool_options.spares_for_next_task = true;
    return std::make_shared<RunnerPool>(pool_options);
  };
  std::shared_ptr<RunnerPool> pool = make_pool();
  for (const auto& [problem, candidate] : pairs) {
    Result<Task> task = LoadTaskOrProblem(problem);
    if (!task.ok()) {
      std::printf("%s: skipped: %s\n", problem.stem().c_str(), task.status().ToString().c_str());
      skipped.push_back(problem.stem().string());
      continue;
    }
    if (pool_per_problem) pool = make_pool();
    EvalOptions options;
    options.runner_exe = fs::path(KOPE_BINARY_DIR) / "kope-runner";
    options.pool = pool;
    Evaluator evaluator(**backend, options);
    const std::string source = ReadFileText(candidate).value_or("");
    Row row{problem.stem().string(),
            candidate.filename().string(),
            GigabytesPerCall(*task, (*backend)->language()),
            {},
            {}};
    bool failed = false;
    for (int r = 0; r < repeat && !failed; ++r) {
      Result<Outcome> o = evaluator.Evaluate(*task, source, candidate.filename().string());
      if (!o.ok()) {
        std::printf("%s: skipped: %s\n", row.problem.c_str(), o.status().ToString().c_str());
        skipped.push_back(row.problem);
        failed = true;
        break;
      }
      std::printf(
          "%s %s #%d: %s, %.1f s, bridge %.3f s (load %.3f map %.3f call %.3f check %.3f time "
          "%.3f copy %.3f), reused %d, spares %d, compile %.3f s, torch.compile first call "
          "%.1f s,%s %.4g GB per call\n",
          row.problem.c_str(), row.candidate.c_str(), r + 1, VerdictName(o->verdict).data(),
          o->eval_seconds, o->bridge_overhead_seconds, Request(*o, "load"), Request(*o, "map"),
          Request(*o, "call"), Request(*o, "check"), Request(*o, "time"), Request(*o, "copy"),
          o->runners_reused, o->runners_from_spares, o->compile_seconds,
          o->compiled_first_call_seconds, FlagsText(*o).c_str(), row.gigabytes);
      if (o->verdict != Verdict::kValid) {  // what went wrong, for the next run to start from
        std::printf("  %s %s\n", o->message.c_str(), o->runtime_detail.substr(0, 600).c_str());
      }
      std::fflush(stdout);
      (r == 0 ? row.first : row.next.emplace_back()) = *o;
    }
    if (!failed) rows.push_back(std::move(row));
  }

  std::printf("\n%-36s %-12s %-5s %7s %6s %7s %7s %6s %6s %6s %6s %6s %6s %7s %7s\n", "problem",
              "candidate", "valid", "first s", "eval s", "first", "next", "load", "map", "call",
              "check", "time", "copy", "ex copy", "target");
  for (const Row& row : rows) {
    std::vector<double> next, next_load, next_map, next_call, next_check, next_time, next_copy,
        next_eval;
    bool valid = row.first.valid();
    for (const Outcome& o : row.next) {
      next.push_back(o.bridge_overhead_seconds);
      next_load.push_back(Request(o, "load"));
      next_map.push_back(Request(o, "map"));
      next_call.push_back(Request(o, "call"));
      next_check.push_back(Request(o, "check"));
      next_time.push_back(Request(o, "time"));
      next_copy.push_back(Request(o, "copy"));
      next_eval.push_back(o.eval_seconds);
      valid = valid && o.valid();
    }
    const double ex_copy = Median(next) - Median(next_copy);
    std::printf(
        "%-36s %-12s %-5s %7.1f %6.1f %7.3f %7.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %7.3f "
        "%7s\n",
        row.problem.substr(0, 36).c_str(), row.candidate.substr(0, 12).c_str(),
        valid ? "yes" : "NO", row.first.eval_seconds, Median(next_eval),
        row.first.bridge_overhead_seconds, Median(next), Median(next_load), Median(next_map),
        Median(next_call), Median(next_check), Median(next_time), Median(next_copy), ex_copy,
        Median(next) <= 0.5 ? "met"
        : ex_copy <= 0.5    ? "ex copy"
                            : "missed");
  }
  std::printf(
      "(bridge overhead: time waited on PyTorch bridge processes beyond their kernels' "
      "own time, with the tensor copies between arena and GPU in 'copy' and the reference "
      "runner's checks of a ModelNew in 'check'; first s / first = the "
      "problem's first evaluation, wall and bridge overhead; eval s, next and its parts = "
      "medians of the following %d; target: met = next <= 0.5 s, 'ex copy' = only without "
      "the copies)\n",
      repeat - 1);

  // Over the problems: the distribution of the per-problem figures.
  std::vector<double> first_all, next_all, ex_copy_all, copy_all, eval_all;
  int met = 0, met_ex_copy = 0, valid_all = 0;
  for (const Row& row : rows) {
    std::vector<double> next, copy, eval;
    bool valid = row.first.valid();
    for (const Outcome& o : row.next) {
      next.push_back(o.bridge_overhead_seconds);
      copy.push_back(Request(o, "copy"));
      eval.push_back(o.eval_seconds);
      valid = valid && o.valid();
    }
    first_all.push_back(row.first.bridge_overhead_seconds);
    next_all.push_back(Median(next));
    copy_all.push_back(Median(copy));
    ex_copy_all.push_back(Median(next) - Median(copy));
    eval_all.push_back(Median(eval));
    met += Median(next) <= 0.5 ? 1 : 0;
    met_ex_copy += Median(next) - Median(copy) <= 0.5 ? 1 : 0;
    valid_all += valid ? 1 : 0;
  }
  auto quantile = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  std::printf("\n%zu problems evaluated, %zu skipped, %d valid in every evaluation\n", rows.size(),
              skipped.size(), valid_all);
  std::printf("%-28s %9s %9s %9s %9s\n", "over the problems", "median", "p90", "max", "min");
  for (const auto& [label, v] :
       {std::pair<const char*, const std::vector<double>*>{"next: bridge overhead s", &next_all},
        {"next: copies s", &copy_all},
        {"next: without copies s", &ex_copy_all},
        {"first: bridge overhead s", &first_all},
        {"next: evaluation wall s", &eval_all}}) {
    std::printf("%-28s %9.3f %9.3f %9.3f %9.3f\n", label, quantile(*v, 0.5), quantile(*v, 0.9),
                quantile(*v, 1.0), quantile(*v, 0.0));
  }
  std::printf(
      "next candidates at most 0.5 s of bridge overhead: %d of %zu problems (%d without the "
      "copies)\n",
      met, rows.size(), met_ex_copy);
  // By bytes per call: the median next overhead and how many met the target.
  std::printf("%-22s %8s %12s %10s\n", "GB per call", "problems", "next median", "<= 0.5 s");
  const size_t bands = std::size(kBandEdges) + 1;
  for (size_t b = 0; b < bands; ++b) {
    const double lo = b == 0 ? 0 : kBandEdges[b - 1];
    const double hi = b + 1 == bands ? 1e30 : kBandEdges[b];
    std::vector<double> in_band;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].gigabytes > lo && rows[i].gigabytes <= hi) in_band.push_back(next_all[i]);
    }
    if (in_band.empty()) continue;
    const auto within =
        std::count_if(in_band.begin(), in_band.end(), [](double v) { return v <= 0.5; });
    char label[32];
    if (b + 1 == bands) {
      std::snprintf(label, sizeof(label), "above %.1f", lo);
    } else {
      std::snprintf(label, sizeof(label), "%.1f to %.1f", lo, hi);
    }
    std::printf("%-22s %8zu %12.3f %10td\n", label, in_band.size(), quantile(in_band, 0.5), within);
  }
  for (const std::string& s : skipped) std::printf("skipped: %s\n", s.c_str());
  return 0;
}
