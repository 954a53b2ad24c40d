// `kope eval TASK CANDIDATE...`: the evaluator's verdict on each candidate.
#include <unistd.h>

#include <iostream>

#include "commands.h"
#include "eval_backend.h"
#include "eval_client.h"
#include "kope/agent/candidate_evaluator.h"
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
  std::vector<std::string> candidates;
  std::string candidate;  // the only one, for the warm service (WarmRequestFrom)
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

// The store --record writes to, opened before any work so that a bad location fails at once;
// null without --record. False: it cannot be opened (said on stderr).
bool OpenStoreFor(const EvalArgs& args, std::string* location,
                  std::unique_ptr<memory::GraphStore>* store) {
  if (!args.record) return true;
  Result<std::string> resolved = memory::ResolveStoreLocation(args.store);
  Result<std::unique_ptr<memory::GraphStore>> opened =
      resolved.ok() ? memory::OpenStore(*resolved)
                    : Result<std::unique_ptr<memory::GraphStore>>(resolved.status());
  if (!opened.ok()) {
    std::cerr << "kope eval: cannot open the experience store: " << opened.status().message()
              << "\n";
    return false;
  }
  *location = *resolved;
  *store = std::move(opened).value();
  return true;
}

EvalOptions OptionsFor(const EvalArgs& args) {
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
  return options;
}

// The candidates' sources, in order; nullopt where one cannot be read (said on stderr).
std::optional<std::vector<std::string>> ReadCandidates(const EvalArgs& args) {
  std::vector<std::string> sources;
  for (const std::string& path : args.candidates) {
    Result<std::string> source = ReadFileText(path);
    if (!source.ok()) {
      std::cerr << "kope eval: cannot read the candidate " << path << "\n";
      return std::nullopt;
    }
    sources.push_back(std::move(*source));
  }
  return sources;
}

// The backend every candidate runs on; an error where they need different ones.
Result<std::unique_ptr<Backend>> MakeBackendFor(const EvalArgs& args, const Task& task) {
  KOPE_ASSIGN_OR_RETURN(std::string name,
                        EvalBackendName(args.backend, args.candidates.front(), task));
  for (const std::string& candidate : args.candidates) {
    KOPE_ASSIGN_OR_RETURN(std::string other, EvalBackendName(args.backend, candidate, task));
    if (other != name) {
      return Status::InvalidArgument(args.candidates.front() + " runs on " + name + " and " +
                                     candidate + " on " + other + ": evaluate them apart");
    }
  }
  return MakeEvalBackend(name);
}

int RunEval(EvalArgs args) {
  if (args.candidates.size() == 1) {
    args.candidate = args.candidates.front();
    if (std::optional<int> code = EvaluateWarm(args.warm, WarmRequestFrom(args), args.record)) {
      return *code;
    }
  } else if (args.warm.warm) {
    std::cerr << "kope eval: --warm takes one candidate (several are evaluated in this process, "
                 "their task's runners loaded once)\n";
    return 2;
  }
  Result<Task> task = LoadTaskOrProblem(args.task);
  if (!task.ok()) {
    std::cerr << "kope eval: " << task.status().message() << "\n";
    return 2;
  }
  std::optional<std::vector<std::string>> sources = ReadCandidates(args);
  if (!sources) return 2;
  std::string location;
  std::unique_ptr<memory::GraphStore> store;
  if (!OpenStoreFor(args, &location, &store)) return 2;
  Result<std::unique_ptr<Backend>> backend = MakeBackendFor(args, *task);
  if (!backend.ok()) {
    std::cerr << "kope eval: " << backend.status().message() << "\n";
    return 1;
  }
  const EvalOptions options = OptionsFor(args);
  const bool several = args.candidates.size() > 1, tty = isatty(STDERR_FILENO) != 0;
  // One runner pool for all: the task's runners load once. The next candidate's extension is
  // built while this one is evaluated (agent::LocalEvaluator::Prepare).
  agent::LocalEvaluator evaluator(**backend);
  int code = 0;
  for (size_t i = 0; i < sources->size(); ++i) {
    const std::string name = std::filesystem::path(args.candidates[i]).filename().string();
    if (i + 1 < sources->size()) {
      evaluator.Prepare(*task, (*sources)[i + 1],
                        std::filesystem::path(args.candidates[i + 1]).filename().string(), options);
    }
    Result<Outcome> outcome = evaluator.EvaluateOutcome(*task, (*sources)[i], name, options);
    if (tty && !args.quiet) std::cerr << "\r\033[K" << std::flush;
    if (!outcome.ok()) {
      std::cerr << "kope eval: " << (several ? args.candidates[i] + ": " : "")
                << outcome.status().message() << "\n";
      code = 2;
      continue;
    }
    if (args.json) {
      // Several: one record a line (JSON Lines).
      std::cout << OutcomeToJson(*outcome, several ? -1 : 2) << "\n";
    } else {
      if (several) std::cout << (i ? "\n" : "") << "== " << args.candidates[i] << " ==\n";
      std::cout << FormatOutcome(*outcome);
    }
    std::cout << std::flush;
    if (store) {
      Status recorded = RecordOutcome(*store, location, args, *task, (*backend)->language(),
                                      (*sources)[i], *outcome);
      if (!recorded.ok()) {
        std::cerr << "kope eval: recording the outcome failed: " << recorded.message() << "\n";
        code = std::max(code, 1);
      }
    }
    if (!outcome->valid()) code = std::max(code, 1);
  }
  return code;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Verify and time one candidate kernel against a task's reference and baseline");
  cmd->add_option("task", args->task,
                  "Task folder (holding task.toml), or a KernelBench problem file (.py)")
      ->required();
  cmd->add_option("candidate", args->candidates,
                  "Candidate kernel source files, evaluated in turn (the task's runners loaded "
                  "once; the next one's extension built while one is evaluated)")
      ->required();
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
