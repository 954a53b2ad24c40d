// Suites: `kope bench DIR` runs an episode on every task of a folder and reports on them all.
//
// The tasks are DIR itself when it holds task.toml, else every sub-folder of DIR that does and
// every KernelBench problem file (*.py, imported on first use: torch_bridge/bridge.h), in name
// order. Each task gets one episode (agent::RunEpisode) labelled "bench:NAME" (NAME: the
// suite's name, by default DIR's folder name). A suite is resumable: a task whose latest run
// with that label is finished is reported from the graph and not run again; an unfinished one is
// resumed. `fresh` starts new runs for every task. Up to `jobs` episodes run at once, each on its
// own thread with its own proposer and evaluator, sharing the store and the backend (on a small
// machine, episodes timed side by side disturb each other's timings: jobs = 1 is the careful
// choice).
//
// The report (metrics as in KernelBench and the KOPE paper):
//   pass rate     tasks whose best kernel is valid / tasks;
//   fast_p        tasks whose best kernel is valid and faster than p times the baseline, / tasks,
//                 for p = 1.0, 1.5 and 2.0;
//   geomean       geometric mean of the best speedups over the tasks with a valid kernel, and
//                 over all tasks with the others counted as 1.0 (the baseline is kept);
//   roofline      mean fraction of the roofline floor reached by the best kernels, over the tasks
//                 that declare one (and the same for their baselines);
//   tokens, cost  summed over the tasks' runs (cost at the configured price of the model);
//   by language   for each candidate language the runs wrote in (agent/candidate_language.h):
//                 its attempts, the tasks it passed (a valid, unflagged attempt in it), the
//                 tasks whose best kernel is in it (where it won), its best and geomean speedup
//                 (of each task's best attempt in it, over the tasks it passed); the summary
//                 shows them when more than one language ran.
// WriteSuiteReport writes report.json, report.csv (one row per task) and speedup.svg (a bar
// chart of the best speedups, log scale, with the fast_p thresholds marked).
//
// Thread safety: RunSuite blocks until every episode has ended; the log stream is written under
// one lock. The formatting functions are pure.
#ifndef KOPE_BENCH_SUITE_SUITE_H_
#define KOPE_BENCH_SUITE_SUITE_H_

#include <atomic>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kope/agent/episode.h"
#include "kope/agent/proposer_setup.h"
#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::bench_suite {

struct SuiteOptions {
  std::string name;  // "" : the folder's name
  int jobs = 1;
  bool fresh = false;
  // Budgets, stop rules, evaluation options and cancel flag of every episode; the label, resume,
  // prior nodes and observer are set by the suite.
  agent::EpisodeOptions episode;
  std::ostream* log = nullptr;  // progress lines ("[gelu] a3 <- a1 ..."); null: none
};

struct TaskResult {
  std::string name;
  std::string family;
  std::filesystem::path dir;
  // "ran" (an episode ran in this invocation), "recorded" (finished earlier, read from the
  // graph), "error" (the task could not be loaded or its episode failed to start).
  std::string status;
  std::string error;
  std::optional<agent::EpisodeReport> report;

  bool valid() const;      // the best kernel is valid
  double speedup() const;  // of the best kernel; 0 without one
};

struct LanguageMetrics {
  std::string language;
  int attempts = 0;
  int valid_attempts = 0;
  int tasks_passed = 0;  // tasks with a valid attempt in this language
  int tasks_won = 0;     // tasks whose best kernel is in this language
  double best_speedup = 0;
  double geomean_speedup = 0;  // over tasks_passed; 0 when none
};

struct SuiteMetrics {
  int tasks = 0;
  int valid = 0;
  double pass_rate = 0;
  double fast_1_0 = 0;
  double fast_1_5 = 0;
  double fast_2_0 = 0;
  double geomean_speedup = 0;      // over valid tasks; 0 when none
  double geomean_speedup_all = 0;  // over all, others as 1.0; 0 when no tasks
  std::optional<double> mean_roofline;
  std::optional<double> mean_baseline_roofline;
  int roofline_tasks = 0;
  int attempts = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;
  std::vector<LanguageMetrics> languages;  // in the order they first appear
};

struct SuiteReport {
  std::string name;
  std::filesystem::path dir;
  std::string proposer;
  std::string backend;
  std::string device;
  std::string date;  // ISO 8601, UTC, when the report was made
  double wall_seconds = 0;
  std::vector<TaskResult> tasks;
  SuiteMetrics metrics;
};

std::vector<std::filesystem::path> FindSuiteTasks(const std::filesystem::path& dir);

// `proposers` makes one proposer per episode; `backend` compiles for all of them. NotFound when
// DIR holds no task.
Result<SuiteReport> RunSuite(memory::GraphStore& store, Backend& backend,
                             const agent::ProposerSet& proposers, const std::filesystem::path& dir,
                             const SuiteOptions& options);

// The metrics of a list of results (each report's cost_usd is taken as the run's cost).
SuiteMetrics ComputeMetrics(const std::vector<TaskResult>& tasks);
// Now, as reports date themselves: ISO 8601, UTC ("2026-12-02T15:04:05Z").
std::string UtcNow();
// A task's status after its episode: "recorded" when it resumed a finished run and did nothing,
// else "ran".
std::string TaskStatusOf(const agent::EpisodeReport& report);

std::string SuiteReportToJson(const SuiteReport& report, int indent = 2);
std::string SuiteReportToCsv(const SuiteReport& report);
std::string SpeedupChartSvg(const SuiteReport& report);
std::string FormatSuiteSummary(const SuiteReport& report);

// Writes report.json, report.csv and speedup.svg into `out_dir` (created if needed).
Status WriteSuiteReport(const SuiteReport& report, const std::filesystem::path& out_dir);

}  // namespace kope::bench_suite

#endif  // KOPE_BENCH_SUITE_SUITE_H_
