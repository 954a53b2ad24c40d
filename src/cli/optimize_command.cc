// `kope optimize TASK`: one episode on one task, recorded in the experience graph.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.h"
#include "kope/agent/backend_choice.h"
#include "kope/agent/candidate_language.h"
#include "kope/agent/episode.h"
#include "kope/agent/progress.h"
#include "kope/agent/proposer_setup.h"
#include "kope/memory/store_location.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::cli {
namespace {

std::atomic<bool> g_cancel{false};

extern "C" void OnInterrupt(int) {
  g_cancel.store(true);
  // A second Ctrl-C ends kope at once; the graph keeps everything recorded so far.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

struct OptimizeArgs {
  std::string task;
  std::string store;
  std::string backend = "auto";
  std::string language;
  bool llm = false;
  std::string provider;
  std::string llm_config;
  int attempts = 30;
  double time = 0;
  int64_t tokens = 0;
  int patience = 12;
  double sol = 0.9;
  bool json = false;
  std::string out;
  bool fresh = false;
  int64_t run = 0;
  bool no_transfer = false;
  bool no_confirm = false;
  bool passive = false;
  int64_t context_budget = 8000;
  bool no_bubblewrap = false;
  bool quiet = false;
  std::string label = "optimize";
};

int RunOptimize(const OptimizeArgs& args) {
  Result<Task> task = LoadTaskOrProblem(args.task);
  if (!task.ok()) {
    std::cerr << "kope optimize: " << task.status().message() << "\n";
    return 2;
  }
  Result<std::unique_ptr<Backend>> backend = agent::OpenBackend({args.backend, &*task, {}});
  if (!backend.ok()) {
    std::cerr << "kope optimize: " << backend.status().message() << "\n";
    return backend.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  Result<std::string> language =
      agent::ResolveLanguageChoice(args.language, (*backend)->language(), *task);
  if (!language.ok()) {
    std::cerr << "kope optimize: " << language.status().message() << "\n";
    return 2;
  }
  Result<std::string> location = memory::ResolveStoreLocation(args.store);
  if (!location.ok()) {
    std::cerr << "kope optimize: " << location.status().message() << "\n";
    return 2;
  }
  Result<std::unique_ptr<memory::GraphStore>> store = memory::OpenStore(*location);
  if (!store.ok()) {
    std::cerr << "kope optimize: " << store.status().message() << "\n";
    return 1;
  }
  agent::ProposerChoice choice;
  choice.llm = args.llm;
  choice.provider = args.provider;
  choice.config_path = args.llm_config;
  choice.store_location = *location;
  choice.context_budget_tokens = args.context_budget;
  choice.mode = args.passive ? context::ContextMode::kPassive : context::ContextMode::kActive;
  choice.offline.transfer = !args.no_transfer;
  Result<agent::ProposerSet> proposers = agent::OpenProposers(choice);
  if (!proposers.ok()) {
    std::cerr << "kope optimize: " << proposers.status().message() << "\n";
    return 2;
  }
  std::unique_ptr<agent::Proposer> proposer = proposers->Make();

  agent::EpisodeOptions options;
  options.budgets.attempts = args.attempts;
  options.budgets.seconds = args.time;
  options.budgets.tokens = args.tokens;
  options.stop.patience = args.patience;
  options.stop.speed_of_light = args.sol;
  options.label = args.label;
  options.language = *language;
  options.resume = !args.fresh;
  options.run_id = args.run;
  options.confirm = !args.no_confirm;
  options.eval.use_bubblewrap = !args.no_bubblewrap;
  options.config_json = proposers->config_json();
  options.cancel = &g_cancel;
  std::unique_ptr<agent::EpisodeObserver> display;
  if (!args.quiet) {
    agent::ProgressOptions progress;
    progress.terminal = isatty(STDERR_FILENO) != 0;
    display = agent::CreateProgressDisplay(std::cerr, progress);
    options.observer = display.get();
  }
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  Result<agent::EpisodeReport> report =
      agent::RunEpisode(**store, **backend, *task, *proposer, options);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!report.ok()) {
    std::cerr << "kope optimize: " << report.status().message() << "\n";
    return 1;
  }

  std::string out = args.out;
  if (out.empty() && report->best) {
    out = task->name + "_best" +
          std::string(agent::SourceExtension(report->best_source, (*backend)->language()));
  }
  if (report->best && !out.empty()) {
    std::ofstream file(out, std::ios::binary | std::ios::trunc);
    file << report->best_source;
    if (!file.flush()) {
      std::cerr << "kope optimize: cannot write the best kernel to " << out << "\n";
      return 1;
    }
  }
  if (args.json) {
    std::cout << agent::EpisodeReportToJson(*report) << "\n";
  } else {
    std::cout << agent::FormatEpisodeSummary(*report);
    if (report->best) std::cout << "best kernel written to " << out << "\n";
    std::cout << "store: " << *location << "\n";
  }
  if (report->stop_reason == "error") {
    std::cerr << "kope optimize: " << report->error << "\n";
    return 1;
  }
  if (report->stop_reason == "cancelled") return 130;
  return report->best ? 0 : 1;
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
  cmd->add_option("--llm", args->provider,
                  "Propose with an LLM: --llm for the configuration's default provider, "
                  "--llm=NAME for another (put it after TASK)")
      ->expected(0, 1);
  cmd->add_option("--llm-config", args->llm_config,
                  "LLM configuration file (default: $KOPE_LLM_CONFIG)");
  cmd->add_option("--store", args->store,
                  "Experience store (default: $KOPE_STORE, else the user's data folder)");
  cmd->add_option("--backend", args->backend, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option(
         "--language", args->language,
         "What the proposer writes: cpp or cuda, a native kernel in kope's C ABI in the "
         "backend's language (the default); triton, a ModelNew module (KernelBench's format: a "
         "Python file defining class ModelNew(nn.Module) with Model's constructor and forward) "
         "whose kernels are @triton.jit; torch, a ModelNew in PyTorch (load_inline allowed); "
         "alternate, the native language and triton in turns. triton, torch and alternate need "
         "a PyTorch task (a KernelBench problem); attempts record their language, and runs are "
         "resumed only with the same choice")
      ->check(CLI::IsMember({"cpp", "cuda", "triton", "torch", "alternate"}));
  cmd->add_option("--attempts", args->attempts, "Attempts in the run (default 30)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--time", args->time, "Wall-time budget of this session in seconds (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--tokens", args->tokens, "LLM token budget of the run (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  cmd->add_option("--patience", args->patience,
                  "Stop after this many attempts without a new best (0: never; default 12)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--sol", args->sol,
                  "Stop when the best reaches this fraction of the roofline (0: never; 0.9)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_flag("--json", args->json, "Print the episode report as JSON");
  cmd->add_option("--out", args->out,
                  "Where to write the best kernel (default: TASK_best.cc, .cu, or .py for a "
                  "ModelNew)");
  cmd->add_flag("--fresh", args->fresh, "Start a new run instead of resuming an unfinished one");
  cmd->add_option("--run", args->run, "Resume this run (its id)");
  cmd->add_flag("--no-transfer", args->no_transfer,
                "Do not start from other tasks' recorded kernels of the family");
  cmd->add_flag("--no-confirm", args->no_confirm, "Do not re-time a new best carefully");
  cmd->add_flag("--passive", args->passive,
                "LLM context: the whole history instead of ranked experience (ablation)");
  cmd->add_option("--context-budget", args->context_budget, "LLM prompt budget in tokens")
      ->check(CLI::Range(int64_t{500}, int64_t{2000000}));
  cmd->add_option("--label", args->label, "Run label (runs are resumed by label)");
  cmd->add_flag("--no-bwrap", args->no_bubblewrap,
                "Do not use bubblewrap (weaker sandbox: rlimits, seccomp, process group)");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress display");
  cmd->callback([args, cmd, exit_code] {
    args->llm = cmd->count("--llm") > 0;
    *exit_code = RunOptimize(*args);
  });
}

}  // namespace kope::cli
