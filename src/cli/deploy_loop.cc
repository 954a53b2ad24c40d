// `kope deploy WORKLOAD --out DIR`: profile (or reuse DIR's profile of the same workload) ->
// optimize the top patchable tasks, the attempt budget split by their shares of the time ->
// integrate each task's best candidates and validate them in the model (the accuracy gate, then
// speed end to end; on a rejection the next-best) -> record what the model said on each attempt
// -> a second round for the tasks left without a patch -> the artifact and the report. The
// experience graph is the journal: episodes resume where they stopped, so an interrupted
// deploy runs again with the same command.
#include "deploy_loop.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "deploy_steps.h"
#include "episode_flags.h"
#include "kope/agent/backend_choice.h"
#include "kope/agent/candidate_language.h"
#include "kope/agent/episode.h"
#include "kope/agent/progress.h"
#include "kope/agent/proposer_setup.h"
#include "kope/base/file.h"
#include "kope/deploy/in_model.h"
#include "kope/deploy/plan.h"
#include "kope/deploy/profile.h"
#include "kope/deploy/recording.h"
#include "kope/deploy/workload.h"
#include "kope/memory/store_location.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kWhat = "kope deploy";

struct LoopArgs {
  std::string workload;
  std::string out;
  int top = 0;  // opportunities the profile extracts; 0: the workload's extract.top
  int tasks = 4;
  std::vector<std::string> units;  // unit kinds optimized; empty: every patchable one
  int candidates = 3;
  int rounds = 2;
  int e2e_rounds = 5;
  EpisodeFlags episode;
};

// What the loop holds while it runs.
struct Loop {
  const LoopArgs* args = nullptr;
  fs::path out;
  deploy::Workload workload;
  std::unique_ptr<memory::GraphStore> store;
  std::unique_ptr<Backend> backend;
  agent::ProposerSet proposers;
  std::map<std::string, agent::EpisodeReport> reports;  // the latest episode of each task
  std::vector<deploy::RuntimeDecision> runtime;         // what the profile suggests
  memory::NodeId workload_id = 0;                       // the workload's node in the store
};

int Fail(const Status& status, int code) {
  std::cerr << kWhat << ": " << status.message() << "\n";
  return code;
}

// DIR's profile when it was made of this very workload (profile.json holds the workload it
// ran); otherwise a new one.
Result<deploy::Profile> ProfileOrReuse(const Loop& loop, const std::string& workload_json) {
  const fs::path path = loop.out / "profile.json";
  if (Result<std::string> text = ReadFileText(path); text.ok()) {
    json old = json::parse(*text, nullptr, false);
    if (!old.is_discarded() && old.is_object() && old.contains("workload") &&
        old["workload"] == json::parse(workload_json)) {
      std::cerr << "reusing " << path.string() << " (same workload)\n";
      return deploy::ReadProfile(path);
    }
  }
  fs::path profile;
  if (RunProfileStep(loop.out, kWhat, loop.args->episode.quiet, &profile) != 0) {
    return Status::Internal("the profile failed");
  }
  return deploy::ReadProfile(profile);
}

// The task's episode of this round: a run labelled with the workload and the round, resumed when
// an interrupted deploy began it, reported as it is when it finished.
Result<agent::EpisodeReport> Optimize(Loop& loop, const deploy::DeployTask& t, int round) {
  KOPE_ASSIGN_OR_RETURN(Task task, LoadTask(t.folder));
  KOPE_ASSIGN_OR_RETURN(
      std::string language,
      agent::ResolveLanguageChoice(loop.args->episode.language, loop.backend->language(), task));
  agent::EpisodeOptions options;
  ApplyEpisodeFlags(loop.args->episode, options);
  options.budgets.attempts = t.attempts;
  options.label = "deploy:" + loop.workload.name + (round > 1 ? ":" + std::to_string(round) : "");
  options.language = language;
  options.resume = !loop.args->episode.fresh;
  options.reuse_finished = true;
  options.config_json = loop.proposers.config_json();
  options.cancel = InterruptGuard::cancel();
  std::unique_ptr<agent::EpisodeObserver> display;
  if (!loop.args->episode.quiet) {
    agent::ProgressOptions progress;
    progress.terminal = isatty(STDERR_FILENO) != 0;
    progress.prefix = "[" + t.name + "] ";
    display = agent::CreateProgressDisplay(std::cerr, progress);
    options.observer = display.get();
  }
  std::unique_ptr<agent::Proposer> proposer = loop.proposers.Make();
  return agent::RunEpisode(*loop.store, *loop.backend, task, *proposer, options);
}

// Whether the model already rejected this attempt (an in_model outcome that is not accepted).
Result<bool> RejectedInModel(memory::GraphStore& store, memory::NodeId attempt) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::OutcomeNode> outcomes, store.Outcomes(attempt));
  for (const memory::OutcomeNode& o : outcomes) {
    if (o.stage != "in_model") continue;
    json evidence = json::parse(o.evidence_json, nullptr, false);
    if (!evidence.is_discarded() && !evidence.value("accepted", false)) return true;
  }
  return false;
}

// The candidate's file under DIR/candidates (and its shared object, compiled by the backend, for
// a native kernel).
Result<deploy::PlanCandidate> WriteCandidate(Loop& loop, const deploy::DeployTask& t,
                                             const memory::AttemptView& view) {
  KOPE_ASSIGN_OR_RETURN(std::string source, loop.store->GetSource(view.attempt.source_hash));
  const std::string ext(agent::SourceExtension(source, loop.backend->language()));
  const fs::path dir = loop.out / "candidates" / t.name;
  fs::create_directories(dir);
  deploy::PlanCandidate c;
  c.attempt = view.attempt.id;
  c.source = dir / ("a" + std::to_string(view.attempt.id) + ext);
  if (view.outcome) c.speedup = view.outcome->speedup;
  KOPE_RETURN_IF_ERROR(WriteText(c.source, source));
  if (ext == ".py") return c;
  KOPE_ASSIGN_OR_RETURN(CompiledKernel compiled,
                        loop.backend->Compile(source, c.source.filename().string()));
  if (!compiled.ok())
    return Status::Internal("a" + std::to_string(c.attempt) + " does not compile");
  c.compiled = dir / ("a" + std::to_string(view.attempt.id) + ".so");
  fs::copy_file(compiled.artifact, c.compiled, fs::copy_options::overwrite_existing);
  return c;
}

// The task's best valid attempts on this hardware that the model has not rejected, best first.
Result<deploy::PlanTask> CandidatesOf(Loop& loop, const deploy::DeployTask& t,
                                      const agent::EpisodeReport& report) {
  deploy::PlanTask plan{t, {}};
  memory::BestQuery query;
  query.task_id = report.task_id;
  query.hardware_id = report.hardware_id;
  query.limit = 4 * loop.args->candidates;
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> best, loop.store->BestAttempts(query));
  for (const memory::AttemptView& view : best) {
    if (static_cast<int>(plan.candidates.size()) >= loop.args->candidates) break;
    KOPE_ASSIGN_OR_RETURN(bool rejected, RejectedInModel(*loop.store, view.attempt.id));
    if (rejected) continue;
    Result<deploy::PlanCandidate> c = WriteCandidate(loop, t, view);
    if (!c.ok()) {
      std::cerr << "[" << t.name << "] skipped: " << c.status().message() << "\n";
      continue;
    }
    plan.candidates.push_back(std::move(*c));
  }
  return plan;
}

std::string Provenance(Loop& loop) {
  json p = {{"workload", loop.workload.name}, {"backend", std::string(loop.backend->name())}};
  if (Result<HardwareInfo> hw = loop.backend->Hardware(); hw.ok()) p["device"] = hw->device;
  return p.dump();
}

// Writes the plan, runs the validation step, records what it found; the validation.
Result<deploy::Validation> Validate(Loop& loop, const std::vector<deploy::PlanTask>& plan) {
  const fs::path plan_path = loop.out / "plan.json";
  KOPE_RETURN_IF_ERROR(
      WriteText(plan_path, deploy::PlanJson(loop.out / "workload.json", loop.out, Provenance(loop),
                                            plan, loop.runtime)));
  KOPE_ASSIGN_OR_RETURN(deploy::ProfilerCommand command,
                        deploy::PythonDeployCommand("validate",
                                                    {"--plan", plan_path.string(), "--rounds",
                                                     std::to_string(loop.args->e2e_rounds)},
                                                    loop.out / "validate.log"));
  fs::path result;
  if (RunPythonStep(command, kWhat, loop.args->episode.quiet, &result) != 0) {
    return Status::Internal("the validation in the model failed");
  }
  KOPE_ASSIGN_OR_RETURN(deploy::Validation validation, deploy::ReadValidation(result));
  KOPE_RETURN_IF_ERROR(deploy::RecordInModel(*loop.store, validation, loop.workload_id).status());
  return validation;
}

// One round: an episode for each task not yet patched, then every task's candidates validated
// in the model (a patched task's accepted one comes first: the model has not rejected it).
Result<deploy::Validation> Round(Loop& loop, const std::vector<deploy::DeployTask>& tasks,
                                 const std::set<std::string>& patched, int round) {
  std::vector<deploy::PlanTask> plan;
  for (const deploy::DeployTask& t : tasks) {
    if (InterruptGuard::cancel()->load()) return Status::Cancelled("interrupted");
    if (!patched.count(t.name) || !loop.reports.count(t.name)) {
      KOPE_ASSIGN_OR_RETURN(loop.reports[t.name], Optimize(loop, t, round));
      const agent::EpisodeReport& r = loop.reports[t.name];
      std::cerr << "[" << t.name << "] round " << round << ": " << r.attempts.size()
                << " attempts, stopped: " << r.stop_reason << (r.best ? "" : ", no valid kernel")
                << "\n";
      if (r.stop_reason == "cancelled") return Status::Cancelled("interrupted");
    }
    KOPE_ASSIGN_OR_RETURN(deploy::PlanTask candidates, CandidatesOf(loop, t, loop.reports[t.name]));
    if (!candidates.candidates.empty()) plan.push_back(std::move(candidates));
  }
  if (plan.empty() && loop.runtime.empty()) {
    return Status::FailedPrecondition("no task has a valid candidate");
  }
  return Validate(loop, plan);
}

Status OpenLoop(const LoopArgs& args, Loop* loop) {
  loop->args = &args;
  KOPE_ASSIGN_OR_RETURN(loop->workload, deploy::LoadWorkload(args.workload));
  if (args.top > 0) loop->workload.extract_top = args.top;
  KOPE_ASSIGN_OR_RETURN(std::string location, memory::ResolveStoreLocation(args.episode.store));
  KOPE_ASSIGN_OR_RETURN(loop->store, memory::OpenStore(location));
  const std::string backend = loop->workload.run.device == "cuda" ? "cuda" : "cpu";
  KOPE_ASSIGN_OR_RETURN(loop->backend, agent::OpenBackend({backend, nullptr, {}}));
  KOPE_ASSIGN_OR_RETURN(loop->proposers,
                        agent::OpenProposers(ProposerChoiceOf(args.episode, location)));
  loop->out = fs::absolute(args.out).lexically_normal();
  fs::create_directories(loop->out);
  return Status::Ok();
}

int RunLoop(const LoopArgs& args) {
  Loop loop;
  if (Status s = OpenLoop(args, &loop); !s.ok()) return Fail(s, 2);
  InterruptGuard guard;
  const std::string workload_json = deploy::WorkloadToJson(loop.workload);
  if (Status s = WriteText(loop.out / "workload.json", workload_json); !s.ok()) return Fail(s, 1);
  Result<deploy::Profile> profile = ProfileOrReuse(loop, workload_json);
  if (!profile.ok()) return Fail(profile.status(), 1);
  Result<deploy::RecordedWorkload> recorded =
      deploy::RecordWorkloadTasks(*loop.store, loop.workload, workload_json, *profile, loop.out);
  if (!recorded.ok()) return Fail(recorded.status(), 1);
  loop.workload_id = recorded->workload_id;
  Result<deploy::TaskSelection> selection =
      deploy::SelectTasks(*profile, loop.out, static_cast<size_t>(args.tasks), args.units);
  if (!selection.ok()) return Fail(selection.status(), 1);
  loop.runtime = deploy::RuntimeDecisions(loop.workload, *profile);
  for (const deploy::RuntimeDecision& d : loop.runtime) {
    std::cerr << "runtime decision: " << d.name << " (" << d.reason << ")\n";
  }
  deploy::SplitAttempts(args.episode.attempts, 1, &selection->tasks);
  for (const std::string& s : selection->skipped) std::cerr << "not optimized: " << s << "\n";
  std::set<std::string> patched;
  Result<deploy::Validation> validation = Status::Internal("no round ran");
  for (int round = 1; round <= args.rounds; ++round) {
    validation = Round(loop, selection->tasks, patched, round);
    if (!validation.ok()) return Fail(validation.status(), 1);
    patched = std::set<std::string>(validation->patches.begin(), validation->patches.end());
    const auto done =
        std::count_if(selection->tasks.begin(), selection->tasks.end(),
                      [&](const deploy::DeployTask& t) { return patched.count(t.name); });
    if (static_cast<size_t>(done) == selection->tasks.size()) break;
  }
  std::cout << deploy::ValidationSummary(*validation);
  std::cout << "report: " << (loop.out / "report.html").string() << "\n";
  return validation->patches.empty() ? 1 : 0;
}

}  // namespace

void ExpandDeployShorthand(std::vector<std::string>& args) {
  if (args.size() < 2 || args[0] != "deploy") return;
  const std::string& next = args[1];
  if (next == "run" || next == "profile" || next.empty() || next[0] == '-') return;
  // A workload file; any other word stays an (unknown) subcommand.
  std::error_code ec;
  const bool file = next.ends_with(".toml") || fs::is_regular_file(next, ec);
  if (file) args.insert(args.begin() + 1, "run");
}

CLI::App* RegisterDeployRun(CLI::App& deploy, int* exit_code) {
  auto args = std::make_shared<LoopArgs>();
  args->episode.attempts = 12;
  CLI::App* run = deploy.add_subcommand(
      "run",
      "The closed loop: profile, optimize the top tasks, validate in the model, write the "
      "patch artifact (also: kope deploy WORKLOAD)");
  run->add_option("workload", args->workload, "The workload file (workload.toml)")->required();
  run->add_option("--out", args->out, "Folder for the profile, tasks, candidates, report")
      ->required();
  run->add_option("--top", args->top, "Opportunities the profile extracts as tasks")
      ->check(CLI::Range(1, 1000000));
  run->add_option("--tasks", args->tasks, "Patchable tasks optimized, best ranked first (4)")
      ->check(CLI::Range(1, 1000));
  run->add_option("--units", args->units,
                  "Only tasks of these unit kinds: norm, linear, mlp, moe, experts")
      ->delimiter(',');
  run->add_option("--attempts", args->episode.attempts,
                  "Attempts per round over all tasks, split by their shares (12)")
      ->check(CLI::Range(1, 100000));
  run->add_option("--candidates", args->candidates, "Candidates per task tried in the model (3)")
      ->check(CLI::Range(1, 100));
  run->add_option("--rounds", args->rounds, "Rounds for tasks left without a patch (2)")
      ->check(CLI::Range(1, 100));
  run->add_option("--e2e-rounds", args->e2e_rounds, "Interleaved end-to-end rounds (5)")
      ->check(CLI::Range(1, 1000));
  run->add_option("--llm", args->episode.provider, "Propose with an LLM (--llm=NAME: another)")
      ->expected(0, 1);
  run->add_option("--llm-config", args->episode.llm_config, "LLM configuration file");
  run->add_option("--language", args->episode.language, "What the proposer writes")
      ->check(CLI::IsMember({"cpp", "cuda", "triton", "torch", "alternate"}));
  run->add_option("--time", args->episode.time, "Wall-time budget per task episode in seconds");
  run->add_option("--store", args->episode.store,
                  "Experience store (default: $KOPE_STORE, else the user's data folder)");
  run->add_flag("--fresh", args->episode.fresh, "Start new runs instead of resuming");
  run->add_flag("--no-bwrap", args->episode.no_bubblewrap, "Do not use bubblewrap");
  run->add_flag("-q,--quiet", args->episode.quiet, "No progress display");
  run->callback([args, run, exit_code] {
    args->episode.llm = run->count("--llm") > 0;
    *exit_code = RunLoop(*args);
  });
  return run;
}

}  // namespace kope::cli
