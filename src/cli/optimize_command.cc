// `kope optimize TASK`: one episode on one task, recorded in the experience graph.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "commands.h"
#include "episode_flags.h"
#include "kope/agent/backend_choice.h"
#include "kope/agent/candidate_language.h"
#include "kope/agent/episode.h"
#include "kope/agent/progress.h"
#include "kope/agent/proposer_setup.h"
#include "kope/memory/model.h"
#include "kope/memory/store_location.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::cli {
namespace {

// The flags of its own; the shared ones in `episode`.
struct OptimizeArgs {
  std::string task;
  std::string out;
  int64_t run = 0;
  int64_t context_budget = 8000;
  std::string label = "optimize";
  EpisodeFlags episode;
};

int Fail(const Status& status, int exit_code) {
  std::cerr << "kope optimize: " << status.message() << "\n";
  return exit_code;
}

agent::EpisodeOptions EpisodeOptionsOf(const OptimizeArgs& args, const std::string& language,
                                       std::string config_json) {
  agent::EpisodeOptions options;
  ApplyEpisodeFlags(args.episode, options);
  options.label = args.label;
  options.language = language;
  options.resume = !args.episode.fresh;
  options.run_id = args.run;
  options.config_json = std::move(config_json);
  options.cancel = InterruptGuard::cancel();
  return options;
}

// The episode, with a progress display unless --quiet; Ctrl-C (or SIGTERM) cancels it.
Result<agent::EpisodeReport> RunCancellableEpisode(const OptimizeArgs& args,
                                                   memory::GraphStore& store, Backend& backend,
                                                   const Task& task, agent::Proposer& proposer,
                                                   agent::EpisodeOptions options) {
  std::unique_ptr<agent::EpisodeObserver> display;
  if (!args.episode.quiet) {
    agent::ProgressOptions progress;
    progress.terminal = isatty(STDERR_FILENO) != 0;
    display = agent::CreateProgressDisplay(std::cerr, progress);
    options.observer = display.get();
  }
  InterruptGuard guard;
  return agent::RunEpisode(store, backend, task, proposer, options);
}

// Writes the best kernel to --out, else TASK_best with its language's extension; returns where
// ("" when there is no best).
Result<std::string> WriteBest(const OptimizeArgs& args, const Task& task, const Backend& backend,
                              const agent::EpisodeReport& report) {
  std::string out = args.out;
  if (out.empty() && report.best) {
    out = task.name + "_best" +
          std::string(agent::SourceExtension(report.best_source, backend.language()));
  }
  if (report.best && !out.empty()) {
    std::ofstream file(out, std::ios::binary | std::ios::trunc);
    file << report.best_source;
    if (!file.flush()) return Status::Internal("cannot write the best kernel to " + out);
  }
  return out;
}

// The report as JSON or a summary, and the exit status it ends the command with.
int Report(const OptimizeArgs& args, const agent::EpisodeReport& report, const std::string& out,
           const std::string& location) {
  if (args.episode.json) {
    std::cout << agent::EpisodeReportToJson(report) << "\n";
  } else {
    std::cout << agent::FormatEpisodeSummary(report);
    if (report.best) std::cout << "best kernel written to " << out << "\n";
    std::cout << "store: " << location << "\n";
  }
  if (report.stop_reason == "error") return Fail(Status::Internal(report.error), 1);
  if (report.stop_reason == "cancelled") return 130;
  return report.best ? 0 : 1;
}

int RunOptimize(const OptimizeArgs& args) {
  Result<Task> task = LoadTaskOrProblem(args.task);
  if (!task.ok()) return Fail(task.status(), 2);
  Result<std::unique_ptr<Backend>> backend = agent::OpenBackend({args.episode.backend, &*task, {}});
  if (!backend.ok()) {
    return Fail(backend.status(), backend.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  Result<std::string> language =
      agent::ResolveLanguageChoice(args.episode.language, (*backend)->language(), *task);
  if (!language.ok()) return Fail(language.status(), 2);
  Result<std::string> location = memory::ResolveStoreLocation(args.episode.store);
  if (!location.ok()) return Fail(location.status(), 2);
  Result<std::unique_ptr<memory::GraphStore>> store = memory::OpenStore(*location);
  if (!store.ok()) return Fail(store.status(), 1);
  agent::ProposerChoice choice = ProposerChoiceOf(args.episode, *location);
  choice.context_budget_tokens = args.context_budget;
  Result<agent::ProposerSet> proposers = agent::OpenProposers(choice);
  if (!proposers.ok()) return Fail(proposers.status(), 2);
  std::unique_ptr<agent::Proposer> proposer = proposers->Make();

  Result<WorkerEvaluation> workers =
      OpenWorkerEvaluation(args.episode, **backend,
                           "optimize:" + task->name + ":" + std::to_string(memory::NowMillis()));
  if (!workers.ok()) {
    return Fail(workers.status(), workers.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  agent::EpisodeOptions options = EpisodeOptionsOf(args, *language, proposers->config_json());
  options.evaluator = workers->evaluator.get();
  Result<agent::EpisodeReport> report =
      RunCancellableEpisode(args, **store, **backend, *task, *proposer, std::move(options));
  if (!report.ok()) return Fail(report.status(), 1);
  Result<std::string> out = WriteBest(args, *task, **backend, *report);
  if (!out.ok()) return Fail(out.status(), 1);
  return Report(args, *report, *out, *location);
}

}  // namespace

void RegisterOptimizeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "optimize",
      "Optimize one task: propose, evaluate, record and reflect until a budget or a stop rule");
  cmd->add_option("task", args->task,
                  "Task folder (holding task.toml), or a KernelBench problem file (.py)")
      ->required();
  cmd->add_option("--llm", args->episode.provider,
                  "Propose with an LLM: --llm for the configuration's default provider, "
                  "--llm=NAME for another (put it after TASK)")
      ->expected(0, 1);
  cmd->add_option("--llm-config", args->episode.llm_config,
                  "LLM configuration file (default: $KOPE_LLM_CONFIG)");
  cmd->add_option("--store", args->episode.store,
                  "Experience store (default: $KOPE_STORE, else the user's data folder)");
  cmd->add_option("--workers", args->episode.workers,
                  "Evaluate every candidate on `kope worker` processes through the queue of this "
                  "shared store (postgresql://...), instead of here");
  cmd->add_option("--backend", args->episode.backend, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option(
         "--language", args->episode.language,
         "What the proposer writes: cpp or cuda, a native kernel in kope's C ABI in the "
         "backend's language (the default); triton, a ModelNew module (KernelBench's format: a "
         "Python file defining class ModelNew(nn.Module) with Model's constructor and forward) "
         "whose kernels are @triton.jit; torch, a ModelNew in PyTorch (load_inline allowed); "
         "alternate, the native language and triton in turns. triton, torch and alternate need "
         "a PyTorch task (a KernelBench problem); attempts record their language, and runs are "
         "resumed only with the same choice")
      ->check(CLI::IsMember({"cpp", "cuda", "triton", "torch", "alternate"}));
  cmd->add_option("--attempts", args->episode.attempts, "Attempts in the run (default 30)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--time", args->episode.time,
                  "Wall-time budget of this session in seconds (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--tokens", args->episode.tokens, "LLM token budget of the run (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  cmd->add_option("--patience", args->episode.patience,
                  "Stop after this many attempts without a new best (0: never; default 12)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--sol", args->episode.sol,
                  "Stop when the best reaches this fraction of the roofline (0: never; 0.9)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_flag("--json", args->episode.json, "Print the episode report as JSON");
  cmd->add_option("--out", args->out,
                  "Where to write the best kernel (default: TASK_best.cc, .cu, or .py for a "
                  "ModelNew)");
  cmd->add_flag("--fresh", args->episode.fresh,
                "Start a new run instead of resuming an unfinished one");
  cmd->add_option("--run", args->run, "Resume this run (its id)");
  cmd->add_flag("--no-transfer", args->episode.no_transfer,
                "Do not start from other tasks' recorded kernels of the family");
  cmd->add_flag("--no-confirm", args->episode.no_confirm, "Do not re-time a new best carefully");
  cmd->add_flag("--passive", args->episode.passive,
                "LLM context: the whole history instead of ranked experience (ablation)");
  cmd->add_option("--context-budget", args->context_budget, "LLM prompt budget in tokens")
      ->check(CLI::Range(int64_t{500}, int64_t{2000000}));
  cmd->add_option("--label", args->label, "Run label (runs are resumed by label)");
  cmd->add_flag("--no-bwrap", args->episode.no_bubblewrap,
                "Do not use bubblewrap (weaker sandbox: rlimits, seccomp, process group)");
  cmd->add_flag("-q,--quiet", args->episode.quiet, "No progress display");
  cmd->callback([args, cmd, exit_code] {
    args->episode.llm = cmd->count("--llm") > 0;
    *exit_code = RunOptimize(*args);
  });
}

}  // namespace kope::cli
