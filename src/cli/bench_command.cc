// `kope bench DIR`: an episode per task of a folder, and a report on them all.
#include <iostream>
#include <memory>

#include "bench_ablation.h"
#include "bench_workers.h"
#include "commands.h"
#include "episode_flags.h"
#include "kope/agent/backend_choice.h"
#include "kope/bench_suite/suite.h"
#include "kope/memory/model.h"
#include "kope/memory/store_location.h"

namespace kope::cli {
namespace {

// The flags of its own; the shared ones in `episode`.
struct BenchArgs {
  std::string dir;
  std::string name;
  std::string out;
  int jobs = 1;
  EpisodeFlags episode;                 // with --workers: the episodes evaluate on the queue
  std::vector<std::string> candidates;  // with --workers: evaluate these files, no episodes
  bool episodes_on_workers = false;     // with --workers: the whole episodes run there
  AblationArgs ablation;                // with --ablation
};

int RunBench(BenchArgs& args) {
  if (!args.ablation.factor.empty()) {
    if (!args.episode.workers.empty()) {
      std::cerr << "kope bench: --ablation runs episodes; it does not take --workers\n";
      return 2;
    }
    args.ablation.suite = args.dir;
    args.ablation.name = args.name;
    args.ablation.out = args.out;
    args.ablation.episode = args.episode;
    return RunBenchAblation(args.ablation);
  }
  if (args.episodes_on_workers) {
    if (args.episode.workers.empty()) {
      std::cerr << "kope bench: --episodes-on-workers needs --workers URL\n";
      return 2;
    }
    return RunSuiteOnWorkers({args.episode.workers, args.dir, args.name, args.out, args.episode});
  }
  if (!args.candidates.empty()) {
    if (args.episode.workers.empty()) {
      std::cerr << "kope bench: --candidate files are evaluated by workers: give --workers\n";
      return 2;
    }
    return RunBenchOnWorkers({args.episode.workers, args.dir, args.name, args.candidates, 5,
                              args.episode.no_bubblewrap, args.episode.json, args.episode.quiet});
  }
  Result<std::string> location = memory::ResolveStoreLocation(args.episode.store);
  if (!location.ok()) {
    std::cerr << "kope bench: " << location.status().message() << "\n";
    return 2;
  }
  Result<std::unique_ptr<memory::GraphStore>> store = memory::OpenStore(*location);
  if (!store.ok()) {
    std::cerr << "kope bench: " << store.status().message() << "\n";
    return 1;
  }
  Result<std::unique_ptr<Backend>> backend =
      agent::OpenBackend({args.episode.backend, nullptr, {}});
  if (!backend.ok()) {
    std::cerr << "kope bench: " << backend.status().message() << "\n";
    return 1;
  }
  const std::string native((*backend)->language());
  const std::string& language = args.episode.language;
  if ((language == "cpp" || language == "cuda") && language != native) {
    std::cerr << "kope bench: --language " << language << " writes native kernels for the "
              << (language == "cuda" ? "cuda" : "cpu") << " backend, and this suite runs on "
              << (*backend)->name() << " (choose it with --backend)\n";
    return 2;
  }
  Result<agent::ProposerSet> proposers =
      agent::OpenProposers(ProposerChoiceOf(args.episode, *location));
  if (!proposers.ok()) {
    std::cerr << "kope bench: " << proposers.status().message() << "\n";
    return 2;
  }

  Result<WorkerEvaluation> workers = OpenWorkerEvaluation(
      args.episode, **backend, "bench:" + args.dir + ":" + std::to_string(memory::NowMillis()));
  if (!workers.ok()) {
    std::cerr << "kope bench: " << workers.status().message() << "\n";
    return workers.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }

  bench_suite::SuiteOptions options;
  options.name = args.name;
  options.jobs = args.jobs;
  options.fresh = args.episode.fresh;
  ApplyEpisodeFlags(args.episode, options.episode);
  options.episode.config_json = proposers->config_json();
  options.episode.cancel = InterruptGuard::cancel();
  options.episode.evaluator = workers->evaluator.get();
  if (!args.episode.quiet) options.log = &std::cerr;

  Result<bench_suite::SuiteReport> report = [&] {
    InterruptGuard guard;
    return bench_suite::RunSuite(**store, **backend, *proposers, args.dir, options);
  }();
  if (!report.ok()) {
    std::cerr << "kope bench: " << report.status().message() << "\n";
    return report.status().code() == StatusCode::kNotFound ? 2 : 1;
  }
  const std::string out = args.out.empty() ? "kope-bench-" + report->name : args.out;
  Status written = bench_suite::WriteSuiteReport(*report, out);
  if (!written.ok()) {
    std::cerr << "kope bench: " << written.message() << "\n";
    return 1;
  }
  if (args.episode.json) {
    std::cout << bench_suite::SuiteReportToJson(*report) << "\n";
  } else {
    std::cout << bench_suite::FormatSuiteSummary(*report);
    std::cout << "report: " << out << "/report.json, report.csv, speedup.svg\n";
  }
  if (InterruptGuard::cancel()->load()) return 130;
  for (const bench_suite::TaskResult& t : report->tasks) {
    if (t.status == "error" || (t.report && t.report->stop_reason == "error")) return 1;
  }
  return 0;
}

}  // namespace

void RegisterBenchCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Optimize every task of a folder and report pass rate, fast_p, geomean speedup");
  cmd->add_option("dir", args->dir, "A folder of task folders (or one task folder)")->required();
  cmd->add_option("--name", args->name,
                  "Suite name; runs are labelled bench:NAME and resumed by it (default: the "
                  "folder's name)");
  cmd->add_option("--out", args->out, "Report folder (default: kope-bench-NAME)");
  cmd->add_option("--store", args->episode.store,
                  "Experience store (default: $KOPE_STORE, else the user's data folder)");
  cmd->add_option("--backend", args->episode.backend, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--llm", args->episode.provider,
                  "Propose with an LLM: --llm for the default provider, --llm=NAME for another "
                  "(put it after DIR)")
      ->expected(0, 1);
  cmd->add_option("--llm-config", args->episode.llm_config,
                  "LLM configuration file (default: $KOPE_LLM_CONFIG)");
  cmd->add_option("--language", args->episode.language,
                  "What the proposer writes for every task: cpp or cuda (native kernels, the "
                  "backend's language; the default), triton or torch (ModelNew modules; PyTorch "
                  "tasks only, others fail with the reason), or alternate (native and triton in "
                  "turns). With more than one language, the report gives each one's passes and "
                  "best speedups")
      ->check(CLI::IsMember({"cpp", "cuda", "triton", "torch", "alternate"}));
  cmd->add_option("-j,--jobs", args->jobs, "Episodes at once (default 1: fair timings)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--attempts", args->episode.attempts, "Attempts per task (default 30)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--time", args->episode.time, "Wall-time budget per task and session, seconds")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--tokens", args->episode.tokens, "LLM token budget per task (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  cmd->add_option("--patience", args->episode.patience,
                  "Stop a task after this many attempts without a new best (0: never)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--sol", args->episode.sol,
                  "Stop a task at this fraction of the roofline (0: never)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_flag("--fresh", args->episode.fresh,
                "New runs for every task, ignoring earlier results");
  cmd->add_flag("--no-transfer", args->episode.no_transfer,
                "Do not start from other tasks' recorded kernels of the family");
  cmd->add_flag("--no-confirm", args->episode.no_confirm, "Do not re-time a new best carefully");
  cmd->add_flag("--passive", args->episode.passive, "LLM context: the whole history (ablation)");
  cmd->add_flag("--json", args->episode.json, "Print the report as JSON");
  cmd->add_flag("--no-bwrap", args->episode.no_bubblewrap, "Do not use bubblewrap");
  cmd->add_flag("-q,--quiet", args->episode.quiet, "No progress lines");
  cmd->add_option("--workers", args->episode.workers,
                  "Evaluate the episodes' candidates on `kope worker` processes through the "
                  "queue of this shared store (postgresql://...), instead of here");
  cmd->add_flag("--episodes-on-workers", args->episodes_on_workers,
                "With --workers: run each task's whole episode on a worker (proposing too), "
                "recorded in the shared store; for a cluster whose GPUs only the workers have");
  cmd->add_option("--candidate", args->candidates,
                  "With --workers, instead of episodes: evaluate these candidate files of each "
                  "task folder (repeatable) and collect the verdicts");
  cmd->add_option("--ablation", args->ablation.factor,
                  "Instead of one pass: the suite's arms that differ only in this factor "
                  "(memory: a fresh graph per task vs one accumulating graph, in the suite's "
                  "order and its reverse; context: active vs passive prompts; transfer: on vs "
                  "off), each repeated; DIR may be a suite file (docs/ABLATIONS.md)")
      ->check(CLI::IsMember({"memory", "context", "transfer"}));
  cmd->add_option("--repeat", args->ablation.repeat,
                  "With --ablation: repetitions of every arm (default 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--import", args->ablation.imports,
                  "With --ablation: an experience pack or exchange file imported into every "
                  "graph that has memory (repeatable)");
  cmd->add_option("--kernelbench", args->ablation.kernelbench,
                  "With --ablation: the KernelBench folder a suite file's kernelbench: tasks are "
                  "read from (default: $KOPE_KERNELBENCH)");
  cmd->add_option("--context-budget", args->ablation.context_budget,
                  "With --ablation: the active prompt's token budget (default 8000)")
      ->check(CLI::Range(int64_t{500}, int64_t{1} << 30));
  cmd->add_option("--from-report", args->ablation.from_report,
                  "With --ablation: instead of running, judge the runs of this ablation.json "
                  "again (repetitions cut short left out) and rewrite its report");
  cmd->callback([args, cmd, exit_code] {
    args->episode.llm = cmd->count("--llm") > 0;
    *exit_code = RunBench(*args);
  });
}

}  // namespace kope::cli
