// `kope eval TASK CANDIDATE`: the evaluator's verdict on one candidate.
#include <unistd.h>

#include <iostream>

#include "commands.h"
#include "eval_backend.h"
#include "eval_client.h"
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"
#include "kope/memory/record.h"
#include "kope/memory/store_location.h"
#include "kope/record/graph_nodes.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::cli {
namespace {

struct EvalArgs {
  std::string task;
  std::string candidate;
  bool json = false;
  bool confirm = false;
  bool no_bubblewrap = false;
  bool quiet = false;
  bool record = false;
  std::string store;
  std::string decision;
  int trials = 5;
  double timeout = 10;
  std::string backend = "auto";
  bool profile = false;
  bool sanitize = false;
  WarmOptions warm;
};

Result<std::unique_ptr<Backend>> MakeBackend(const EvalArgs& args, const Task& task) {
  KOPE_ASSIGN_OR_RETURN(std::string name, EvalBackendName(args.backend, args.candidate, task));
  return MakeEvalBackend(name);
}

// Puts the verdict into the experience graph: task, hardware, a run labelled
// "eval", the candidate as a root attempt by a human, and its outcome.
Status RecordOutcome(memory::GraphStore& store, const std::string& location, const EvalArgs& args,
                     const Task& task, std::string_view language, const std::string& source,
                     const Outcome& outcome) {
  memory::AttemptNode attempt;
  attempt.decision =
      args.decision.empty() ? "evaluated by hand: " + outcome.candidate_name : args.decision;
  attempt.proposer = "human";
  KOPE_ASSIGN_OR_RETURN(
      memory::EvaluationRecord evaluation,
      record::EvaluationRecordFor(task, language, outcome, source, std::move(attempt), "eval"));
  KOPE_ASSIGN_OR_RETURN(memory::RecordedIds ids, memory::RecordEvaluation(store, evaluation));
  std::cerr << "recorded as attempt:" << ids.attempt << " (outcome:" << ids.outcome << ") in "
            << location << "\n";
  return Status::Ok();
}

int RunEval(const EvalArgs& args) {
  if (std::optional<int> code = EvaluateWarm(args.warm, WarmRequestFrom(args), args.record)) {
    return *code;
  }
  Result<Task> task = LoadTaskOrProblem(args.task);
  if (!task.ok()) {
    std::cerr << "kope eval: " << task.status().message() << "\n";
    return 2;
  }
  Result<std::string> source = ReadFileText(args.candidate);
  if (!source.ok()) {
    std::cerr << "kope eval: cannot read the candidate " << args.candidate << "\n";
    return 2;
  }

  // The store is opened before any work, so that a bad location fails at once.
  std::string location;
  std::unique_ptr<memory::GraphStore> store;
  if (args.record) {
    Result<std::string> resolved = memory::ResolveStoreLocation(args.store);
    Result<std::unique_ptr<memory::GraphStore>> opened =
        resolved.ok() ? memory::OpenStore(*resolved)
                      : Result<std::unique_ptr<memory::GraphStore>>(resolved.status());
    if (!opened.ok()) {
      std::cerr << "kope eval: cannot open the experience store: " << opened.status().message()
                << "\n";
      return 2;
    }
    location = *resolved;
    store = std::move(opened).value();
  }

  Result<std::unique_ptr<Backend>> backend = MakeBackend(args, *task);
  if (!backend.ok()) {
    std::cerr << "kope eval: " << backend.status().message() << "\n";
    return 1;
  }
  EvalOptions options;
  options.trials = args.trials;
  options.call_timeout_seconds = args.timeout;
  options.use_bubblewrap = !args.no_bubblewrap;
  options.profile = args.profile;
  options.sanitize = args.sanitize;
  if (args.confirm) {
    options.timing = TimingPolicy::Confirm();
    options.timing_label = "confirm";
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (!args.quiet) {
    options.progress = [tty](std::string_view line) {
      if (tty) {
        std::cerr << "\r\033[K" << line << std::flush;
      }
    };
  }
  Evaluator evaluator(**backend, options);
  std::string name = std::filesystem::path(args.candidate).filename().string();
  Result<Outcome> outcome = evaluator.Evaluate(*task, *source, name);
  if (tty && !args.quiet) std::cerr << "\r\033[K" << std::flush;
  if (!outcome.ok()) {
    std::cerr << "kope eval: " << outcome.status().message() << "\n";
    return 2;
  }
  if (args.json) {
    std::cout << OutcomeToJson(*outcome) << "\n";
  } else {
    std::cout << FormatOutcome(*outcome);
  }
  if (store) {
    Status recorded =
        RecordOutcome(*store, location, args, *task, (*backend)->language(), *source, *outcome);
    if (!recorded.ok()) {
      std::cerr << "kope eval: recording the outcome failed: " << recorded.message() << "\n";
      return 1;
    }
  }
  return outcome->valid() ? 0 : 1;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Verify and time one candidate kernel against a task's reference and baseline");
  cmd->add_option("task", args->task,
                  "Task folder (holding task.toml), or a KernelBench problem file (.py)")
      ->required();
  cmd->add_option("candidate", args->candidate, "Candidate kernel source file")->required();
  cmd->add_flag("--json", args->json, "Print the full outcome record as JSON");
  cmd->add_flag("--confirm", args->confirm,
                "Time carefully (at least 0.5 s of samples each) instead of screening");
  cmd->add_option("--trials", args->trials, "Verification trials per size set (at least 5)")
      ->check(CLI::Range(5, 1000));
  cmd->add_option("--timeout", args->timeout,
                  "Seconds one kernel call may take (a candidate gets 5x its reference's slowest "
                  "call where that is longer)")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_flag("--no-bwrap", args->no_bubblewrap,
                "Do not use bubblewrap (weaker sandbox: rlimits, seccomp, process group)");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress display");
  cmd->add_flag("--record", args->record,
                "Record the verdict in the experience graph (task, hardware, attempt, outcome)");
  cmd->add_option(
      "--store", args->store,
      "Experience store (default: $KOPE_STORE, else ~/.local/share/kope/experience.db)");
  cmd->add_option("--decision", args->decision,
                  "With --record: what the candidate changes, in words");
  cmd->add_option("--backend", args->backend,
                  "cpu, cuda, or auto (CUDA for a .cu candidate when the task has a CUDA baseline "
                  "and a GPU is present)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_flag("--profile", args->profile,
                "Profile a valid candidate (CUDA: Nsight Compute) and store compact metrics");
  cmd->add_flag("--sanitize", args->sanitize,
                "Gate on memory and race checkers (CUDA: compute-sanitizer memcheck, racecheck, "
                "initcheck) at the check sizes");
  AddWarmFlags(cmd, &args->warm);
  cmd->callback([args, exit_code] { *exit_code = RunEval(*args); });
}

}  // namespace kope::cli
