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
#include <optional>
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

struct Options {
  std::string backend_name = "cuda";
  int repeat = 3;
  bool pool_per_problem = false;
  std::vector<std::pair<fs::path, fs::path>> pairs;  // problem, candidate
};

// The options, or nullopt when the command line is not understood.
std::optional<Options> ParseOptions(int argc, char** argv) {
  Options options;
  fs::path common_candidate;
  std::vector<fs::path> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      options.backend_name = argv[++i];
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      options.repeat = std::max(2, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--candidate") == 0 && i + 1 < argc) {
      common_candidate = argv[++i];
    } else if (std::strcmp(argv[i], "--pool-per-problem") == 0) {
      options.pool_per_problem = true;
    } else if (argv[i][0] == '-') {
      return std::nullopt;
    } else {
      positional.emplace_back(argv[i]);
    }
  }
  if (!common_candidate.empty()) {
    for (const fs::path& p : positional) options.pairs.emplace_back(p, common_candidate);
  } else {
    if (positional.size() % 2 != 0) return std::nullopt;
    for (size_t i = 0; i < positional.size(); i += 2) {
      options.pairs.emplace_back(positional[i], positional[i + 1]);
    }
  }
  if (options.pairs.empty()) return std::nullopt;
  return options;
}

Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name) {
  const fs::path cache = fs::temp_directory_path() / "kope-kernelbench-bench-cache";
  if (name == "cuda") {
    CudaBackendOptions options;
    options.cache_dir = cache;
    return CreateCudaBackend(options);
  }
  if (name == "cpu") {
    CpuBackendOptions options;
    options.cache_dir = cache;
    return CreateCpuBackend(options);
  }
  return Status::InvalidArgument("unknown backend");
}

std::shared_ptr<RunnerPool> MakePool() {
  RunnerPoolOptions pool_options;
  pool_options.spares = true;
  pool_options.spares_for_next_task = true;
  return std::make_shared<RunnerPool>(pool_options);
}

// One problem's evaluations: the first, then the next ones.
struct Row {
  std::string problem, candidate;
  double gigabytes = 0;
  Outcome first;
  std::vector<Outcome> next;
};

struct Report {
  std::vector<Row> rows;
  std::vector<std::string> skipped;
};

// The line each evaluation prints as it ends, with what went wrong when it is not valid (for the
// next run to start from).
void PrintEvaluation(const Row& row, int r, const Outcome& o) {
  std::printf(
      "%s %s #%d: %s, %.1f s, bridge %.3f s (load %.3f map %.3f call %.3f check %.3f time "
      "%.3f copy %.3f), reused %d, spares %d, compile %.3f s, torch.compile first call "
      "%.1f s,%s %.4g GB per call\n",
      row.problem.c_str(), row.candidate.c_str(), r + 1, VerdictName(o.verdict).data(),
      o.eval_seconds, o.bridge_overhead_seconds, Request(o, "load"), Request(o, "map"),
      Request(o, "call"), Request(o, "check"), Request(o, "time"), Request(o, "copy"),
      o.runners_reused, o.runners_from_spares, o.compile_seconds, o.compiled_first_call_seconds,
      FlagsText(o).c_str(), row.gigabytes);
  if (o.verdict != Verdict::kValid) {
    std::printf("  %s %s\n", o.message.c_str(), o.runtime_detail.substr(0, 600).c_str());
  }
  std::fflush(stdout);
}

// Evaluates one problem's candidate `repeat` times; nullopt (reported and added to `skipped`)
// when the problem cannot be evaluated.
std::optional<Row> EvaluateProblem(Backend& backend, const EvalOptions& options, const Task& task,
                                   const fs::path& problem, const fs::path& candidate, int repeat,
                                   std::vector<std::string>& skipped) {
  Evaluator evaluator(backend, options);
  const std::string source = ReadFileText(candidate).value_or("");
  Row row{problem.stem().string(),
          candidate.filename().string(),
          GigabytesPerCall(task, backend.language()),
          {},
          {}};
  for (int r = 0; r < repeat; ++r) {
    Result<Outcome> o = evaluator.Evaluate(task, source, candidate.filename().string());
    if (!o.ok()) {
      std::printf("%s: skipped: %s\n", row.problem.c_str(), o.status().ToString().c_str());
      skipped.push_back(row.problem);
      return std::nullopt;
    }
    PrintEvaluation(row, r, *o);
    (r == 0 ? row.first : row.next.emplace_back()) = *o;
  }
  return row;
}

// The problems in order, with one runner pool for all or a fresh one for each.
Report EvaluateAll(Backend& backend, const Options& options) {
  Report report;
  std::shared_ptr<RunnerPool> pool = MakePool();
  for (const auto& [problem, candidate] : options.pairs) {
    Result<Task> task = LoadTaskOrProblem(problem);
    if (!task.ok()) {
      std::printf("%s: skipped: %s\n", problem.stem().c_str(), task.status().ToString().c_str());
      report.skipped.push_back(problem.stem().string());
      continue;
    }
    if (options.pool_per_problem) pool = MakePool();
    EvalOptions eval_options;
    eval_options.runner_exe = fs::path(KOPE_BINARY_DIR) / "kope-runner";
    eval_options.pool = pool;
    std::optional<Row> row = EvaluateProblem(backend, eval_options, *task, problem, candidate,
                                             options.repeat, report.skipped);
    if (row.has_value()) report.rows.push_back(std::move(*row));
  }
  return report;
}

// A problem's next evaluations, as medians.
struct NextMedians {
  double overhead = 0, load = 0, map = 0, call = 0, check = 0, time = 0, copy = 0, eval = 0;
  bool valid = false;  // every evaluation, the first included, was valid
};

NextMedians MediansOf(const Row& row) {
  std::vector<double> next, load, map, call, check, time, copy, eval;
  bool valid = row.first.valid();
  for (const Outcome& o : row.next) {
    next.push_back(o.bridge_overhead_seconds);
    load.push_back(Request(o, "load"));
    map.push_back(Request(o, "map"));
    call.push_back(Request(o, "call"));
    check.push_back(Request(o, "check"));
    time.push_back(Request(o, "time"));
    copy.push_back(Request(o, "copy"));
    eval.push_back(o.eval_seconds);
    valid = valid && o.valid();
  }
  return {Median(next), Median(load), Median(map),  Median(call), Median(check),
          Median(time), Median(copy), Median(eval), valid};
}

// One row per problem, and what its columns mean.
void PrintTable(const std::vector<Row>& rows, int repeat) {
  std::printf("\n%-36s %-12s %-5s %7s %6s %7s %7s %6s %6s %6s %6s %6s %6s %7s %7s\n", "problem",
              "candidate", "valid", "first s", "eval s", "first", "next", "load", "map", "call",
              "check", "time", "copy", "ex copy", "target");
  for (const Row& row : rows) {
    const NextMedians m = MediansOf(row);
    const double ex_copy = m.overhead - m.copy;
    std::printf(
        "%-36s %-12s %-5s %7.1f %6.1f %7.3f %7.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %7.3f "
        "%7s\n",
        row.problem.substr(0, 36).c_str(), row.candidate.substr(0, 12).c_str(),
        m.valid ? "yes" : "NO", row.first.eval_seconds, m.eval, row.first.bridge_overhead_seconds,
        m.overhead, m.load, m.map, m.call, m.check, m.time, m.copy, ex_copy,
        m.overhead <= 0.5 ? "met"
        : ex_copy <= 0.5  ? "ex copy"
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
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// The per-problem figures over all problems, one list per figure (in the rows' order).
struct Distributions {
  std::vector<double> first, next, ex_copy, copy, eval;
  int met = 0, met_ex_copy = 0, valid = 0;
};

Distributions DistributionsOf(const std::vector<Row>& rows) {
  Distributions d;
  for (const Row& row : rows) {
    const NextMedians m = MediansOf(row);
    d.first.push_back(row.first.bridge_overhead_seconds);
    d.next.push_back(m.overhead);
    d.copy.push_back(m.copy);
    d.ex_copy.push_back(m.overhead - m.copy);
    d.eval.push_back(m.eval);
    d.met += m.overhead <= 0.5 ? 1 : 0;
    d.met_ex_copy += m.overhead - m.copy <= 0.5 ? 1 : 0;
    d.valid += m.valid ? 1 : 0;
  }
  return d;
}

// By bytes per call: the median next overhead and how many met the target.
void PrintBands(const std::vector<Row>& rows, const std::vector<double>& next) {
  std::printf("%-22s %8s %12s %10s\n", "GB per call", "problems", "next median", "<= 0.5 s");
  const size_t bands = std::size(kBandEdges) + 1;
  for (size_t b = 0; b < bands; ++b) {
    const double lo = b == 0 ? 0 : kBandEdges[b - 1];
    const double hi = b + 1 == bands ? 1e30 : kBandEdges[b];
    std::vector<double> in_band;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].gigabytes > lo && rows[i].gigabytes <= hi) in_band.push_back(next[i]);
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
    std::printf("%-22s %8zu %12.3f %10td\n", label, in_band.size(), Quantile(in_band, 0.5), within);
  }
}

// Over the problems: the distribution of the per-problem figures, then by bytes per call.
void PrintSummary(const Report& report) {
  const Distributions d = DistributionsOf(report.rows);
  std::printf("\n%zu problems evaluated, %zu skipped, %d valid in every evaluation\n",
              report.rows.size(), report.skipped.size(), d.valid);
  std::printf("%-28s %9s %9s %9s %9s\n", "over the problems", "median", "p90", "max", "min");
  for (const auto& [label, v] :
       {std::pair<const char*, const std::vector<double>*>{"next: bridge overhead s", &d.next},
        {"next: copies s", &d.copy},
        {"next: without copies s", &d.ex_copy},
        {"first: bridge overhead s", &d.first},
        {"next: evaluation wall s", &d.eval}}) {
    std::printf("%-28s %9.3f %9.3f %9.3f %9.3f\n", label, Quantile(*v, 0.5), Quantile(*v, 0.9),
                Quantile(*v, 1.0), Quantile(*v, 0.0));
  }
  std::printf(
      "next candidates at most 0.5 s of bridge overhead: %d of %zu problems (%d without the "
      "copies)\n",
      d.met, report.rows.size(), d.met_ex_copy);
  PrintBands(report.rows, d.next);
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = ParseOptions(argc, argv);
  if (!options.has_value()) return Usage();
  Result<std::unique_ptr<Backend>> backend = MakeBackend(options->backend_name);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }
  const Report report = EvaluateAll(**backend, *options);
  PrintTable(report.rows, options->repeat);
  PrintSummary(report);
  for (const std::string& s : report.skipped) std::printf("skipped: %s\n", s.c_str());
  return 0;
}
