// Running the arms of an ablation: graphs, episodes, and the prompts counted for each attempt.
#include "kope/bench_suite/ablation.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>

#include "context_meter.h"
#include "kope/bench_suite/suite.h"
#include "kope/eval/runner_pool.h"
#include "kope/memory/exchange.h"
#include "kope/memory/store_location.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::bench_suite {
namespace {

namespace fs = std::filesystem;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct SuiteTask {
  fs::path dir;
  std::optional<Task> task;
  std::string error;
};

// Whether the graph holds a task of `task`'s family other than `task` itself.
bool KnowsFamily(memory::GraphStore& store, const Task& task) {
  Result<std::vector<memory::TaskNode>> known = store.ListTasks(task.family);
  if (!known.ok()) return false;
  return std::any_of(known->begin(), known->end(),
                     [&](const memory::TaskNode& t) { return t.name != task.name; });
}

void FillFromReport(const agent::EpisodeReport& report, const internal::ContextMeter& meter,
                    AblationTaskRun& run) {
  run.valid = report.best && report.best->verdict == "valid" && report.best->speedup;
  run.speedup = run.valid ? *report.best->speedup : 0;
  run.attempts = static_cast<int>(report.attempts.size());
  for (const agent::AttemptSummary& a : report.attempts) {
    const bool counts = a.verdict == "valid" && !a.flagged && a.speedup;
    run.speedups.push_back(counts ? *a.speedup : 0);
    auto tokens = meter.tokens().find(a.id);
    run.active_tokens.push_back(tokens == meter.tokens().end() ? 0 : tokens->second.active);
    run.passive_tokens.push_back(tokens == meter.tokens().end() ? 0 : tokens->second.passive);
    run.proposer_tokens.push_back(a.tokens);
  }
  run.prompt_tokens = report.prompt_tokens;
  run.completion_tokens = report.completion_tokens;
  run.wall_seconds = report.wall_seconds;
  run.stop_reason = report.stop_reason;
  run.error = report.error;
  if (run.error.empty() && !meter.error().empty()) run.error = "context: " + meter.error();
}

class Ablation {
 public:
  Ablation(Backend& backend, const AblationOptions& options)
      : backend_(backend), options_(options) {
    RunnerPoolOptions pool;
    pool.spares = true;
    pool.spares_for_next_task = true;
    pool.scratch_root = options.episode.eval.scratch_root;
    pool_ = std::make_shared<RunnerPool>(pool);
  }

  void Load(const std::vector<fs::path>& dirs) {
    for (const fs::path& dir : dirs) {
      SuiteTask t;
      t.dir = dir;
      Result<Task> task = LoadTaskOrProblem(dir);
      if (task.ok()) {
        t.task = std::move(*task);
      } else {
        t.error = task.status().message();
      }
      tasks_.push_back(std::move(t));
    }
  }

  std::vector<std::string> TaskNames() const {
    std::vector<std::string> names;
    for (const SuiteTask& t : tasks_) {
      names.push_back(t.task ? t.task->name : t.dir.filename().string());
    }
    return names;
  }

  Result<AblationRun> RunArm(const AblationArm& arm, int repetition,
                             const agent::ProposerSet& proposers) {
    const double start = Now();
    AblationRun run;
    run.repetition = repetition;
    std::vector<size_t> order(tasks_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = arm.reverse ? order.size() - 1 - i : i;
    std::unique_ptr<memory::GraphStore> shared;
    const std::string stem = fmt::format("{}-{}-r{}", options_.suite, arm.name, repetition);
    if (arm.shared_graph) {
      KOPE_ASSIGN_OR_RETURN(shared, OpenGraph(stem, true));
    }
    for (size_t position = 0; position < order.size(); ++position) {
      if (Cancelled()) break;
      std::unique_ptr<memory::GraphStore> own;
      if (!arm.shared_graph) {
        KOPE_ASSIGN_OR_RETURN(own, OpenGraph(fmt::format("{}-t{}", stem, position), false));
      }
      memory::GraphStore& store = shared ? *shared : *own;
      AblationTaskRun task_run = RunTask(store, tasks_[order[position]], arm, proposers);
      task_run.position = static_cast<int>(position);
      Log(arm, repetition, task_run);
      run.tasks.push_back(std::move(task_run));
    }
    run.wall_seconds = Now() - start;
    return run;
  }

 private:
  bool Cancelled() const {
    return options_.episode.cancel != nullptr && options_.episode.cancel->load();
  }

  Result<std::unique_ptr<memory::GraphStore>> OpenGraph(const std::string& stem, bool imports) {
    const fs::path file = options_.work_dir / "graphs" / (stem + ".db");
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(file.string() + suffix, ec);
    KOPE_ASSIGN_OR_RETURN(std::unique_ptr<memory::GraphStore> store,
                          memory::OpenStore(file.string()));
    if (!imports) return store;
    for (const fs::path& import : options_.imports) {
      Result<memory::ExchangeReport> imported = memory::ImportJsonlFile(*store, import);
      if (!imported.ok()) {
        return Status(imported.status().code(),
                      "importing " + import.string() + ": " + imported.status().message());
      }
    }
    return store;
  }

  AblationTaskRun RunTask(memory::GraphStore& store, const SuiteTask& entry, const AblationArm& arm,
                          const agent::ProposerSet& proposers) {
    AblationTaskRun run;
    run.task = entry.dir.filename().string();
    if (!entry.task) {
      run.error = entry.error;
      run.stop_reason = "error";
      return run;
    }
    const Task& task = *entry.task;
    run.task = task.name;
    run.family = task.family;
    run.known_family = KnowsFamily(store, task);
    internal::ContextMeter meter(proposers.Make(), options_.context_budget_tokens);
    agent::EpisodeOptions episode = options_.episode;
    if (episode.eval.pool == nullptr) episode.eval.pool = pool_;
    episode.label = "ablation:" + options_.suite + ":" + arm.name;
    episode.resume = false;
    episode.reuse_finished = false;
    episode.run_id = 0;
    episode.prior_nodes = 0;
    episode.config_json = proposers.config_json();
    Result<agent::EpisodeReport> report = agent::RunEpisode(store, backend_, task, meter, episode);
    if (!report.ok()) {
      run.error = report.status().message();
      run.stop_reason = "error";
      return run;
    }
    FillFromReport(*report, meter, run);
    run.cost_usd = proposers.CostUsd(run.prompt_tokens, run.completion_tokens);
    return run;
  }

  void Log(const AblationArm& arm, int repetition, const AblationTaskRun& run) {
    if (options_.log == nullptr) return;
    int64_t active = 0;
    int64_t passive = 0;
    for (int64_t t : run.active_tokens) active += t;
    for (int64_t t : run.passive_tokens) passive += t;
    *options_.log << fmt::format(
                         "[{} r{}] {}: {} in {} attempts ({}); prompt tokens active {} passive "
                         "{}{}\n",
                         arm.name, repetition, run.task,
                         run.valid ? fmt::format("best {:.2f}x", run.speedup) : "no valid kernel",
                         run.attempts, run.stop_reason, active, passive,
                         run.error.empty() ? "" : " (" + run.error + ")")
                  << std::flush;
  }

  Backend& backend_;
  const AblationOptions& options_;
  std::shared_ptr<RunnerPool> pool_;
  std::vector<SuiteTask> tasks_;
};

}  // namespace

std::string_view AblationFactorName(AblationFactor factor) {
  switch (factor) {
    case AblationFactor::kMemory:
      return "memory";
    case AblationFactor::kContext:
      return "context";
    case AblationFactor::kTransfer:
      return "transfer";
  }
  return "memory";
}

Result<AblationFactor> ParseAblationFactor(std::string_view name) {
  for (AblationFactor f :
       {AblationFactor::kMemory, AblationFactor::kContext, AblationFactor::kTransfer}) {
    if (AblationFactorName(f) == name) return f;
  }
  return Status::InvalidArgument("unknown ablation '" + std::string(name) +
                                 "' (memory, context or transfer)");
}

std::vector<AblationArm> ArmsOf(AblationFactor factor) {
  using context::ContextMode;
  switch (factor) {
    case AblationFactor::kMemory:
      return {{"fresh", false, false, ContextMode::kActive, true},
              {"accumulate", true, false, ContextMode::kActive, true},
              {"accumulate-reverse", true, true, ContextMode::kActive, true}};
    case AblationFactor::kContext:
      return {{"active", true, false, ContextMode::kActive, true},
              {"passive", true, false, ContextMode::kPassive, true}};
    case AblationFactor::kTransfer:
      return {{"transfer", true, false, ContextMode::kActive, true},
              {"no-transfer", true, false, ContextMode::kActive, false}};
  }
  return {};
}

Result<AblationReport> RunAblation(Backend& backend, const std::vector<fs::path>& tasks,
                                   const AblationOptions& options) {
  if (tasks.empty()) return Status::NotFound("the suite holds no task");
  if (!options.open_proposers) return Status::InvalidArgument("no proposers to run the arms");
  const double start = Now();
  AblationReport report;
  report.suite = options.suite;
  report.factor = options.factor;
  report.repeat = options.repeat;
  report.attempts_budget = options.episode.budgets.attempts;
  report.context_budget_tokens = options.context_budget_tokens;
  report.fraction = options.fraction;
  report.fast_p = options.fast_p;
  for (const fs::path& p : options.imports) report.imports.push_back(p.filename().string());
  report.backend = std::string(backend.name());
  KOPE_ASSIGN_OR_RETURN(HardwareInfo hardware, backend.Hardware());
  report.device = hardware.device;

  Ablation ablation(backend, options);
  ablation.Load(tasks);
  report.tasks = ablation.TaskNames();
  std::vector<agent::ProposerSet> proposers;
  for (const AblationArm& arm : ArmsOf(options.factor)) {
    KOPE_ASSIGN_OR_RETURN(agent::ProposerSet set, options.open_proposers(arm));
    report.proposer = set.description();
    proposers.push_back(std::move(set));
    AblationArmResult result;
    result.arm = arm;
    report.arms.push_back(std::move(result));
  }
  // Repetition by repetition, every arm in turn: a slow spell of the machine falls on all arms.
  // A repetition cut short by the cancel flag is left out: its last episode did not finish.
  auto cancelled = [&] {
    return options.episode.cancel != nullptr && options.episode.cancel->load();
  };
  for (int r = 1; r <= options.repeat && !cancelled(); ++r) {
    for (size_t a = 0; a < report.arms.size() && !cancelled(); ++a) {
      KOPE_ASSIGN_OR_RETURN(AblationRun run, ablation.RunArm(report.arms[a].arm, r, proposers[a]));
      if (!cancelled()) report.arms[a].runs.push_back(std::move(run));
    }
  }
  ComputeAblationMetrics(report);
  report.date = UtcNow();
  report.wall_seconds = Now() - start;
  return report;
}

}  // namespace kope::bench_suite
