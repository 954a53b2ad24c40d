// The workflow's two figures (docs/PERFORMANCE.md, "Workflow (optimize)"):
//   1. orchestration overhead per attempt: everything an episode does besides evaluating
//      (choosing a node, proposing, reading and writing the graph, reflecting), as a fraction
//      of the evaluation time, on a fresh store and on one prefilled with a synthetic graph;
//   2. the offline proposer on the bundled CPU tasks: the speedup of the best kernel over the
//      naive baseline within a budget of attempts per task, and of the seed it started from.
//
// Usage: agent_bench [--attempts N] [--tasks DIR] [--prefill ATTEMPTS] [--out DIR]
//   --attempts  budget per task (default 30)
//   --tasks     a folder of tasks (default: the source tree's examples/)
//   --prefill   attempts in the synthetic graph the second store starts with (default 20000;
//               0: skip the prefilled measurement); on it, the overhead is measured with the
//               small test tasks (src/agent/testdata/tasks, about a second per evaluation), so
//               the fraction is an upper bound for real tasks
//   --out       where to write the suite report (report.json, report.csv, speedup.svg)
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "kope/agent/episode.h"
#include "kope/agent/offline_proposer.h"
#include "kope/agent/proposer_setup.h"
#include "kope/backend/cpu/cpu_backend.h"
#include "kope/bench_suite/suite.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "synthetic_graph.h"

namespace fs = std::filesystem;
using namespace kope;

namespace {

struct Args {
  int attempts = 30;
  fs::path tasks = fs::path(KOPE_SOURCE_DIR) / "examples";
  int prefill = 20000;
  fs::path out;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "agent_bench: %s\n", what.c_str());
  std::exit(1);
}

Result<bench_suite::SuiteReport> RunOnStore(memory::GraphStore& store, Backend& backend,
                                            const Args& args, const std::string& name) {
  Result<agent::ProposerSet> proposers = agent::OpenProposers({});
  if (!proposers.ok()) return proposers.status();
  bench_suite::SuiteOptions options;
  options.name = name;
  options.jobs = 1;
  options.episode.budgets.attempts = args.attempts;
  options.episode.eval.runner_exe = fs::path(KOPE_BINARY_DIR) / "kope-runner";
  options.log = &std::cerr;
  return bench_suite::RunSuite(store, backend, *proposers, args.tasks, options);
}

void PrintOverhead(const bench_suite::SuiteReport& report, const std::string& label) {
  double eval = 0, orchestration = 0;
  int attempts = 0, evaluations = 0;
  for (const bench_suite::TaskResult& t : report.tasks) {
    if (!t.report) continue;
    eval += t.report->eval_seconds;
    orchestration += t.report->orchestration_seconds;
    attempts += t.report->session_attempts;
    evaluations += t.report->session_evaluations;
  }
  std::printf(
      "%-28s attempts %4d  evaluations %4d  evaluation %8.1f s (%.2f s/attempt)  "
      "orchestration %6.2f s (%.1f ms/attempt, %.2f%% of evaluation)\n",
      label.c_str(), attempts, evaluations, eval, attempts ? eval / attempts : 0, orchestration,
      attempts ? 1e3 * orchestration / attempts : 0, eval > 0 ? 100 * orchestration / eval : 0);
}

void PrintSpeedups(const bench_suite::SuiteReport& report) {
  std::printf("\n%-14s %-12s %9s %9s %9s %8s  %s\n", "task", "family", "seed", "best", "roofline",
              "attempts", "stopped / best decision");
  double log_seed = 0, log_best = 0;
  int n = 0;
  for (const bench_suite::TaskResult& t : report.tasks) {
    if (!t.report || t.report->attempts.empty()) {
      std::printf("%-14s %s\n", t.name.c_str(), t.error.c_str());
      continue;
    }
    // The seed: the run's first attempt, at its latest outcome (the confirming re-timing every
    // first valid kernel gets), so that it compares with the best's confirmed figure.
    const agent::AttemptSummary& first = t.report->attempts.front();
    const double seed = first.verdict == "valid" && first.speedup ? *first.speedup : 0;
    const double best = t.speedup();
    std::printf(
        "%-14s %-12s %8.2fx %8.2fx %8s %8zu  %s: %s\n", t.name.c_str(), t.family.c_str(), seed,
        best,
        t.valid() && t.report->best->roofline
            ? (std::to_string(static_cast<int>(100 * *t.report->best->roofline)) + "%").c_str()
            : "-",
        t.report->attempts.size(), t.report->stop_reason.c_str(),
        t.report->best ? t.report->best->decision.substr(0, 50).c_str() : "-");
    if (seed > 0 && best > 0) {
      log_seed += std::log(seed);
      log_best += std::log(best);
      ++n;
    }
  }
  if (n > 0) {
    std::printf("\ngeomean over %d tasks: seed %.2fx, best %.2fx (tuning: %.2fx)\n", n,
                std::exp(log_seed / n), std::exp(log_best / n),
                std::exp((log_best - log_seed) / n));
  }
  std::printf("%s", bench_suite::FormatSuiteSummary(report).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--attempts") {
      args.attempts = std::atoi(next().c_str());
    } else if (a == "--tasks") {
      args.tasks = next();
    } else if (a == "--prefill") {
      args.prefill = std::atoi(next().c_str());
    } else if (a == "--out") {
      args.out = next();
    } else {
      Die("unknown argument " + a);
    }
  }
  const fs::path scratch =
      fs::temp_directory_path() / ("kope-agent-bench-" + std::to_string(getpid()));
  fs::create_directories(scratch);

  auto backend = CreateCpuBackend();
  if (!backend.ok()) Die(backend.status().ToString());
  auto hw = (*backend)->Hardware();  // measured once and cached before anything is timed
  if (!hw.ok()) Die(hw.status().ToString());
  std::printf("machine: %s, %d cores, %s; %.1f GB/s, %.1f GFLOP/s measured\n", hw->device.c_str(),
              hw->cores, hw->compiler.c_str(), hw->bandwidth_bytes_per_s / 1e9,
              hw->peak_flops / 1e9);

  // 1 and 2 on a fresh store.
  auto store = memory::OpenSqliteStore(scratch / "fresh.db");
  if (!store.ok()) Die(store.status().ToString());
  auto report = RunOnStore(**store, **backend, args, "offline");
  if (!report.ok()) Die(report.status().ToString());
  if (!args.out.empty()) {
    Status written = bench_suite::WriteSuiteReport(*report, args.out);
    if (!written.ok()) Die(written.ToString());
  }
  PrintSpeedups(*report);
  std::printf("\n");
  PrintOverhead(*report, "fresh store");

  // 1 again on a store that already holds a synthetic graph (queries on a larger graph).
  if (args.prefill > 0) {
    auto big = memory::OpenSqliteStore(scratch / "prefilled.db");
    if (!big.ok()) Die(big.status().ToString());
    memory::bench::GraphShape shape;
    shape.families = 10;
    shape.tasks_per_family = 10;
    shape.attempts_per_run = 49;
    shape.runs_per_task = std::max(
        1, args.prefill / (shape.families * shape.tasks_per_family * shape.attempts_per_run));
    shape.insights = 2000;
    Status generated = memory::bench::Generate(**big, shape);
    if (!generated.ok()) Die(generated.ToString());
    auto stats = (*big)->Stats();
    Args small = args;
    small.attempts = 5;
    small.tasks = fs::path(KOPE_SOURCE_DIR) / "src/agent/testdata/tasks";
    auto again = RunOnStore(**big, **backend, small, "prefilled");
    if (!again.ok()) Die(again.status().ToString());
    PrintOverhead(*again, "prefilled store (" + std::to_string(stats.ok() ? stats->attempts : 0) +
                              " attempts)");
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return 0;
}
