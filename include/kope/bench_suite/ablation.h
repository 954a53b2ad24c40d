// Ablations: does recorded experience make later optimization better? `kope bench SUITE
// --ablation FACTOR` runs a suite in arms that differ only in FACTOR, with the same budgets,
// stop rules and proposer, `repeat` times, and reports each arm with 95% confidence intervals
// over the repetitions.
//
// The arms (ArmsOf):
//   memory    fresh: an empty graph for every task | accumulate: one graph, the suite's tasks in
//             its order | accumulate-reverse: one graph, the reverse order;
//   context   active: the prompt built by the context manager under its budget | passive: the
//             run's whole history, no budget (one graph in the suite's order);
//   transfer  transfer: fresh starts from other tasks' recorded kernels | no-transfer: from the
//             task's own seeds only (one graph in the suite's order).
// Every repetition of an arm has its graphs of its own (SQLite files under `work_dir`); the
// `imports` (experience packs or exchange files) are imported into every graph that has memory
// (all but the memory factor's fresh ones). The offline proposer's choices and the node
// selection are deterministic; the evaluator draws fresh secret inputs and times on a shared
// machine, so repetitions differ by timing noise (and, with an LLM, by its sampling).
//
// Tokens: for every attempt, the prompts the context manager would build for it are built (the
// active one under `context_budget_tokens`, the passive one unbounded) and counted, whatever the
// proposer, so the offline arms measure what an LLM would have been sent; with an LLM the
// provider's own prompt and completion tokens and cost are reported as well.
//
// Per task run: the final best speedup, and the attempts it took to reach `fraction` of it (of
// the run's own best, and of the best any arm reached on the task: the reference). Per arm and
// repetition: pass rate, fast_p at each p of `fast_p`, geomean speedup (valid tasks), mean
// attempts to the fraction, prompt tokens; each as mean and 95% t-interval over repetitions.
//
// Targets (ComputeAblationMetrics): memory: on the tasks whose family the graph knew when they
// started (an earlier task of the family, or an imported one) and that some run of the two arms
// solved, the accumulating arms reach the fraction of the run's own final best in at most half
// the attempts of the fresh arm (means over repetitions, summed over those tasks; a run without
// a valid kernel counts its attempt budget), at a geomean final speed at least 0.95 of the fresh
// arm's (a task without a valid kernel at 1.0); context: over the active arms' task runs, the
// passive prompts hold at least 5x the tokens of the active ones.
//
// Thread safety: RunAblation runs one episode at a time, on the calling thread; the formatting
// functions are pure.
#ifndef KOPE_BENCH_SUITE_ABLATION_H_
#define KOPE_BENCH_SUITE_ABLATION_H_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "kope/agent/episode.h"
#include "kope/agent/proposer_setup.h"
#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/context/context_builder.h"

namespace kope::bench_suite {

enum class AblationFactor { kMemory, kContext, kTransfer };
std::string_view AblationFactorName(AblationFactor factor);  // "memory", "context", "transfer"
Result<AblationFactor> ParseAblationFactor(std::string_view name);

struct AblationArm {
  std::string name;
  bool shared_graph = true;  // one accumulating graph; false: an empty graph for every task
  bool reverse = false;      // the suite's tasks in reverse order
  context::ContextMode mode = context::ContextMode::kActive;
  bool transfer = true;
};

std::vector<AblationArm> ArmsOf(AblationFactor factor);

struct AblationOptions {
  std::string suite;  // its name, in labels and the report
  AblationFactor factor = AblationFactor::kMemory;
  int repeat = 3;
  std::filesystem::path work_dir;              // the arms' graphs go under work_dir/graphs
  std::vector<std::filesystem::path> imports;  // imported into every graph with memory
  agent::EpisodeOptions episode;               // budgets, stop rules, evaluation, cancel
  int64_t context_budget_tokens = 8000;        // the active prompt's budget
  // The proposers of an arm (offline or LLM), for its context mode and transfer choice.
  std::function<Result<agent::ProposerSet>(const AblationArm&)> open_proposers;
  std::vector<double> fast_p = {1.0, 1.5, 2.0, 3.0};
  double fraction = 0.9;
  std::ostream* log = nullptr;  // progress lines; null: none
};

// One task's episode in one arm and repetition.
struct AblationTaskRun {
  std::string task;
  std::string family;
  int position = 0;           // in the arm's order
  bool known_family = false;  // its graph held another task of its family when it started
  bool valid = false;         // its best kernel is valid
  double speedup = 0;         // of the best kernel; 0 without one
  int attempts = 0;
  // Per attempt, in order: the speedup of a valid, unflagged outcome (0 otherwise), and the
  // tokens of the prompts built for it.
  std::vector<double> speedups;
  std::vector<int64_t> active_tokens;
  std::vector<int64_t> passive_tokens;
  std::vector<int64_t> proposer_tokens;  // what the proposer itself spent (an LLM's; 0 offline)
  int64_t prompt_tokens = 0;  // the proposer's own (an LLM's), with its completion tokens
  int64_t completion_tokens = 0;
  double cost_usd = 0;
  double wall_seconds = 0;
  std::string stop_reason;
  std::string error;
  // Filled by ComputeAblationMetrics: the 1-based attempt that first reached the fraction of the
  // run's own best and of the reference best; 0: never.
  int attempts_to_own = 0;
  int attempts_to_reference = 0;
};

struct AblationRun {
  int repetition = 0;
  std::vector<AblationTaskRun> tasks;  // in the arm's order
  double wall_seconds = 0;
};

// A mean over repetitions with its 95% t-interval (low == high == mean with one value).
struct Interval {
  double mean = 0;
  double low = 0;
  double high = 0;
  int n = 0;
};
Interval IntervalOf(const std::vector<double>& values);

struct ArmMetrics {
  Interval pass_rate;
  std::vector<Interval> fast_p;  // one per AblationOptions::fast_p
  Interval geomean_speedup;      // over the valid tasks
  Interval attempts_to_own;      // mean over tasks; a run that never reached it: its attempts
  Interval attempts_to_reference;
  Interval tokens_to_reference;  // the arm's prompt tokens spent until then (summed over tasks)
  Interval active_tokens;        // summed over the tasks of a repetition
  Interval passive_tokens;
  Interval prompt_tokens;  // the arm's own: its mode's prompts, or the LLM's when it reported
  Interval cost_usd;
  std::vector<double> active_by_attempt;  // mean over task runs, per attempt index
  std::vector<double> passive_by_attempt;
};

struct AblationArmResult {
  AblationArm arm;
  std::vector<AblationRun> runs;
  ArmMetrics metrics;
};

struct TargetCheck {
  std::string name;        // "memory", "context"
  bool evaluated = false;  // false: the arms it needs did not run, or no task qualified
  bool met = false;
  std::string detail;  // the figures it was judged on, in words
};

struct AblationReport {
  std::string suite;
  AblationFactor factor = AblationFactor::kMemory;
  std::vector<std::string> tasks;  // the suite's order
  std::string proposer;
  std::string backend;
  std::string device;
  std::string date;
  double wall_seconds = 0;
  int repeat = 0;
  int attempts_budget = 0;
  int64_t context_budget_tokens = 0;
  double fraction = 0.9;
  std::vector<double> fast_p;
  std::vector<std::string> imports;
  std::vector<AblationArmResult> arms;
  std::vector<TargetCheck> targets;
};

// Runs every arm `repeat` times over `tasks` (in the suite's order), then computes the metrics.
// When the cancel flag is raised, the repetitions finished so far are reported (an arm's
// interval then counts its own repetitions).
// Errors: the work folder or a graph cannot be made, an import fails, the proposers cannot be
// opened. A task that fails to load or whose episode fails is kept with its error.
Result<AblationReport> RunAblation(Backend& backend,
                                   const std::vector<std::filesystem::path>& tasks,
                                   const AblationOptions& options);

// Fills each task run's attempts to the fraction, each arm's metrics and the targets, from the
// runs alone.
void ComputeAblationMetrics(AblationReport& report);

std::string AblationReportToJson(const AblationReport& report, int indent = 2);
// Three panels: attempts to the fraction of the run's own best and geomean speedup per arm (with
// their intervals), and the prompt tokens per attempt, active and passive.
std::string AblationChartSvg(const AblationReport& report);
std::string FormatAblationSummary(const AblationReport& report);
// The report that AblationReportToJson wrote, its runs read back and its metrics and targets
// computed anew; repetitions cut short (fewer task runs than the suite has tasks, or one that
// stopped as cancelled) are left out. InvalidArgument when the text is not such a report.
Result<AblationReport> AblationReportFromJson(std::string_view text);
// Writes ablation.json and ablation.svg into `out_dir` (created if needed).
Status WriteAblationReport(const AblationReport& report, const std::filesystem::path& out_dir);

}  // namespace kope::bench_suite

#endif  // KOPE_BENCH_SUITE_ABLATION_H_
