#include "kope/agent/episode.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "episode_state.h"
#include "kope/agent/candidate_language.h"
#include "kope/agent/node_selection.h"
#include "kope/base/hash.h"
#include "kope/llm/proposal.h"
#include "kope/memory/text/error_signature.h"
#include "kope/record/graph_nodes.h"
#include "run_choice.h"

namespace kope::agent {
namespace {

using internal::EpisodeState;
using internal::NodeState;
using internal::RunConfig;
using memory::NodeId;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Fills the report's run-wide fields from the state (report->backend set).
Status FillReport(memory::GraphStore& store, const EpisodeState& state, EpisodeReport* report) {
  const std::string native = NativeLanguage(report->backend);
  report->language = state.config().language;
  report->attempts.clear();
  report->valid_attempts = 0;
  for (const NodeState* node : state.RunNodes()) {
    report->attempts.push_back(internal::Summarize(*node, native));
    report->valid_attempts += node->valid() ? 1 : 0;
  }
  report->best.reset();
  report->best_source.clear();
  if (const NodeState* best = state.Best()) {
    report->best = internal::Summarize(*best, native);
    KOPE_ASSIGN_OR_RETURN(report->best_source, store.GetSource(best->attempt.source_hash));
    nlohmann::json e = nlohmann::json::parse(best->latest()->evidence_json, nullptr, false);
    if (e.is_object()) report->baseline_roofline = e.value("baseline_roofline_fraction", 0.0);
  }
  return Status::Ok();
}

class Episode {
 public:
  Episode(memory::GraphStore& store, Backend& backend, const Task& task, Proposer& proposer,
          const EpisodeOptions& options)
      : store_(store), backend_(backend), task_(task), proposer_(proposer), options_(options) {}

  Result<EpisodeReport> Run() {
    start_ = Now();
    KOPE_RETURN_IF_ERROR(Setup());
    if (done_) return report_;
    if (options_.observer != nullptr) {
      KOPE_RETURN_IF_ERROR(FillReport(store_, *state_, &report_));
      options_.observer->OnStart(report_);
    }
    while (report_.stop_reason.empty()) {
      Status s = Iterate();
      if (!s.ok()) {
        const bool cancelled = s.code() == StatusCode::kCancelled || Cancelled();
        report_.stop_reason = cancelled ? "cancelled" : "error";
        if (!cancelled) report_.error = s.message();
      }
    }
    KOPE_RETURN_IF_ERROR(Finish());
    return report_;
  }

 private:
  bool Cancelled() const { return options_.cancel != nullptr && options_.cancel->load(); }

  void Activity(const std::string& line) {
    if (options_.observer != nullptr) options_.observer->OnActivity(line);
  }

  Status Setup() {
    KOPE_ASSIGN_OR_RETURN(std::string language_choice, CheckTaskAndLanguage());
    KOPE_RETURN_IF_ERROR(RecordTaskAndHardware());
    report_.task_id = task_node_.id;
    report_.hardware_id = hardware_node_.id;
    report_.task = task_.name;
    report_.family = task_.family;
    report_.backend = hardware_.backend;
    report_.device = hardware_.device;
    report_.proposer = proposer_.name();
    report_.label = options_.label;

    const internal::RunOwner owner{task_node_.id, hardware_node_.id, task_.name, hardware_.backend};
    KOPE_ASSIGN_OR_RETURN(
        internal::RunChoice choice,
        internal::ChooseRun(store_, options_, owner, NewRunConfig(language_choice)));
    report_.resumed = choice.resumed;
    if (choice.finished) {
      const EpisodeState& finished = *choice.finished;
      report_.run_id = choice.run_id;
      report_.stop_reason = choice.finished_stop;
      report_.prompt_tokens = finished.RunPromptTokens();
      report_.completion_tokens = finished.RunCompletionTokens();
      done_ = true;
      return FillReport(store_, finished, &report_);
    }
    NodeId run_id = choice.run_id;
    if (run_id == 0) {
      KOPE_ASSIGN_OR_RETURN(run_id, StartRun(choice.config));
    }
    report_.run_id = run_id;
    report_.language = choice.config.language;
    state_.emplace(run_id, choice.config);
    return state_->Load(store_, task_node_.id, hardware_node_.id, options_.prior_nodes);
  }

  // The backend's language, checked against the task's baselines; returns the candidate
  // language choice resolved against the task.
  Result<std::string> CheckTaskAndLanguage() {
    language_ = std::string(backend_.language());
    // A PyTorch problem (KernelBench) is every language's baseline.
    if (task_.baselines.count(language_) == 0 && task_.baselines.count("torch") == 0) {
      return Status::InvalidArgument(fmt::format("task {} has no {} baseline for the {} backend",
                                                 task_.name, language_, backend_.name()));
    }
    return ResolveLanguageChoice(options_.language, language_, task_);
  }

  // The task and hardware as nodes of the graph (found or added).
  Status RecordTaskAndHardware() {
    KOPE_ASSIGN_OR_RETURN(hardware_, backend_.Hardware());
    KOPE_ASSIGN_OR_RETURN(task_node_, record::TaskNodeFor(task_, language_));
    hardware_node_ = record::HardwareNodeFor(hardware_);
    return store_.Write([&](memory::GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(task_node_.id, w.PutTask(task_node_));
      KOPE_ASSIGN_OR_RETURN(hardware_node_.id, w.PutHardware(hardware_node_));
      return Status::Ok();
    });
  }

  // What a new run of this episode is started with.
  RunConfig NewRunConfig(const std::string& language_choice) const {
    RunConfig config;
    config.proposer = proposer_.name();
    config.model = proposer_.model();
    config.label = options_.label;
    config.language = language_choice;
    config.budgets = options_.budgets;
    config.stop = options_.stop;
    config.confirm = options_.confirm;
    return config;
  }

  Result<NodeId> StartRun(const RunConfig& config) {
    memory::RunNode run;
    run.task_id = task_node_.id;
    run.hardware_id = hardware_node_.id;
    run.label = options_.label;
    run.compiler = hardware_.compiler;
    run.config_json = internal::RunConfigJson(config, options_.config_json);
    NodeId run_id = 0;
    KOPE_RETURN_IF_ERROR(store_.Write([&](memory::GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(run_id, w.PutRun(run));
      return Status::Ok();
    }));
    return run_id;
  }

  // One step of the loop: pending work first, then the stop rules, then a proposal.
  Status Iterate() {
    if (Cancelled()) {
      report_.stop_reason = "cancelled";
      return Status::Ok();
    }
    const Budgets& budgets = state_->config().budgets;
    if (budgets.seconds > 0 && Now() - start_ >= budgets.seconds) {
      report_.stop_reason = "time";
      return Status::Ok();
    }
    if (const NodeState* node = state_->Unevaluated()) return Evaluate(*node, false);
    if (const NodeState* node = state_->PendingConfirmation()) return Evaluate(*node, true);
    std::string stop = state_->ReplayStop(failed_, pending_prompt_ + pending_completion_);
    if (stop.empty() && consecutive_failed_ >= state_->config().stop.max_failed_proposals) {
      stop = "proposal_failures";
    }
    if (!stop.empty()) {
      report_.stop_reason = stop;
      return Status::Ok();
    }
    return Propose();
  }

  ProposalRequest BaseRequest() const {
    ProposalRequest r;
    r.task = &task_;
    r.language = language_;
    r.candidate_language = NextLanguage();
    r.hardware = hardware_;
    r.store = &store_;
    r.task_id = task_node_.id;
    r.hardware_id = hardware_node_.id;
    r.run_id = state_->run_id();
    r.cancel = options_.cancel;
    return r;
  }

  // The language of the next proposal: the run's, or in turns the one with fewer attempts.
  std::string NextLanguage() const {
    const std::vector<std::string> languages = LanguagesOf(state_->config().language, language_);
    std::string next = languages.front();
    int fewest = -1;
    for (const std::string& language : languages) {
      int n = 0;
      for (const NodeState* node : state_->RunNodes()) {
        n += LanguageOfProposer(node->attempt.proposer, language_) == language ? 1 : 0;
      }
      if (fewest < 0 || n < fewest) {
        fewest = n;
        next = language;
      }
    }
    return next;
  }

  // What a candidate is written in: as its proposer says, else its parent's when the source
  // has the parent's format (a tuner step), else what the source reads as.
  std::string LanguageOf(const Candidate& c, const ProposalRequest& request) const {
    if (!c.language.empty()) return c.language;
    if (request.parent &&
        llm::FormatOfSource(c.source) == llm::FormatOfSource(request.parent_source)) {
      return LanguageOfProposer(request.parent->attempt.proposer, language_);
    }
    return LanguageOfSource(c.source, language_);
  }

  Status Propose() {
    ProposalRequest request = BaseRequest();
    bool fresh = false;
    if (!fresh_blocked_) {
      KOPE_ASSIGN_OR_RETURN(fresh, proposer_.CanStartFresh(request));
    }
    const Selection selection = SelectNode(state_->Arms(fresh, options_.exploration));
    if (selection.kind == Selection::Kind::kNone) {
      report_.stop_reason = "exhausted";
      return Status::Ok();
    }
    const NodeId parent = selection.kind == Selection::Kind::kNode ? selection.node : 0;
    KOPE_RETURN_IF_ERROR(SetParent(parent, request));
    KOPE_ASSIGN_OR_RETURN(ProposeResult result, proposer_.Propose(request));
    model_seconds_ += result.usage.model_seconds;
    report_.cost_usd += result.usage.cost_usd;
    pending_prompt_ += result.usage.prompt_tokens;
    pending_completion_ += result.usage.completion_tokens;
    pending_cost_ += result.usage.cost_usd;

    switch (result.kind) {
      case ProposeResult::Kind::kExhausted:
        if (parent != 0) {
          state_->MarkExhausted(parent);
        } else {
          fresh_blocked_ = true;
        }
        return Status::Ok();
      case ProposeResult::Kind::kFailed:
        return CountFailure(parent, "proposal failed: " + result.reason);
      case ProposeResult::Kind::kCandidate:
        break;
    }
    KOPE_ASSIGN_OR_RETURN(std::string refused, Refusal(result.candidate));
    if (!refused.empty()) return CountFailure(parent, refused);
    consecutive_failed_ = 0;
    return RecordAttempt(parent, result.candidate, request);
  }

  // The request proposes from `parent` (0: a fresh start).
  Status SetParent(NodeId parent, ProposalRequest& request) {
    if (parent == 0) {
      Activity("proposing a fresh start");
      return Status::Ok();
    }
    const NodeState* node = state_->Node(parent);
    request.parent = memory::AttemptView{node->attempt, *node->latest()};
    KOPE_ASSIGN_OR_RETURN(request.parent_source, store_.GetSource(node->attempt.source_hash));
    request.parent_improved = state_->Improved(parent);
    Activity(fmt::format("proposing from a{}", parent));
    return Status::Ok();
  }

  // Why a candidate is not evaluated ("" when it is): a ModelNew for a task without a PyTorch
  // problem, or a source recorded before (whose attempts are offered as nodes instead).
  Result<std::string> Refusal(const Candidate& c) {
    if (llm::FormatOfSource(c.source) == llm::SourceFormat::kModelNew && !task_.torch) {
      return std::string(
          "the proposal is a ModelNew module, and the task has no PyTorch problem to evaluate it "
          "against");
    }
    KOPE_ASSIGN_OR_RETURN(
        std::vector<memory::AttemptView> existing,
        store_.AttemptsWithSource(task_node_.id, hardware_node_.id, ContentHash(c.source)));
    if (existing.empty()) return std::string();
    report_.reused++;
    for (const memory::AttemptView& view : existing) {
      if (view.outcome) state_->AddPrior(view);
    }
    return fmt::format("the proposal repeats a{}, which is not evaluated again",
                       existing.front().attempt.id);
  }

  // The candidate as an attempt of the run, with the tokens spent since the last one.
  Status RecordAttempt(NodeId parent, Candidate& c, const ProposalRequest& request) {
    memory::AttemptNode attempt;
    attempt.run_id = state_->run_id();
    attempt.parent_id = parent;
    attempt.decision = c.decision;
    attempt.classes = c.classes;
    attempt.proposer = ProposerWithLanguage(c.proposer, LanguageOf(c, request), language_);
    attempt.prompt_tokens = pending_prompt_;
    attempt.completion_tokens = pending_completion_;
    attempt.cost_usd = pending_cost_;
    NodeId id = 0;
    KOPE_RETURN_IF_ERROR(store_.Write([&](memory::GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(id, w.PutAttempt(attempt, c.source));
      return c.on_recorded ? c.on_recorded(w, id) : Status::Ok();
    }));
    pending_prompt_ = 0;
    pending_completion_ = 0;
    pending_cost_ = 0;
    KOPE_ASSIGN_OR_RETURN(memory::AttemptNode stored, store_.GetAttempt(id));
    state_->AddAttempt(stored);
    report_.session_attempts++;
    return Status::Ok();
  }

  Status CountFailure(NodeId parent, const std::string& why) {
    failed_++;
    consecutive_failed_++;
    report_.failed_proposals++;
    state_->RecordExpansion(parent);
    Activity(why);
    return Status::Ok();
  }

  // The candidate evaluated after `id`, told to the evaluator (its extension may build while
  // this one is timed).
  void PrepareNext(CandidateEvaluator& evaluator, NodeId id, const EvalOptions& eval) {
    const NodeState* next = state_->Unevaluated(id);
    if (next == nullptr) return;
    Result<std::string> source = store_.GetSource(next->attempt.source_hash);
    if (!source.ok()) return;  // its own evaluation reports it
    evaluator.Prepare(task_, *source, CandidateFileName(*source, language_, next->attempt.id),
                      eval);
  }

  Status Evaluate(const NodeState& node, bool confirm) {
    const NodeId id = node.attempt.id;
    KOPE_ASSIGN_OR_RETURN(std::string source, store_.GetSource(node.attempt.source_hash));
    EvalOptions eval = options_.eval;
    eval.timing = confirm ? TimingPolicy::Confirm() : TimingPolicy::Screen();
    eval.timing_label = confirm ? "confirm" : "screen";
    const std::string prefix = fmt::format("evaluating a{}{}: ", id, confirm ? " (confirm)" : "");
    Activity(prefix + "compiling");
    if (options_.observer != nullptr) {
      EpisodeObserver* observer = options_.observer;
      eval.progress = [observer, prefix](std::string_view line) {
        observer->OnActivity(prefix + std::string(line));
      };
    }
    if (options_.evaluator == nullptr && local_ == nullptr) {
      local_ = std::make_unique<LocalEvaluator>(backend_);
    }
    CandidateEvaluator& evaluator = options_.evaluator != nullptr ? *options_.evaluator : *local_;
    const double t0 = Now();
    const std::string name = CandidateFileName(source, language_, id);
    PrepareNext(evaluator, id, eval);
    Result<memory::OutcomeNode> outcome = evaluator.Evaluate(task_, source, name, eval);
    eval_seconds_ += Now() - t0;
    report_.session_evaluations++;
    if (!outcome.ok()) return outcome.status();

    memory::OutcomeNode recorded = std::move(*outcome);
    recorded.attempt_id = id;
    recorded.error_signature = memory::NormalizeError(recorded.error_message);
    std::optional<memory::AttemptView> parent;
    if (const NodeState* p = state_->Node(node.attempt.parent_id); p != nullptr && p->latest()) {
      // The parent's screening outcome: the child's is one too, so their ratio is fair.
      parent = memory::AttemptView{p->attempt, p->outcomes.front()};
    }
    KOPE_RETURN_IF_ERROR(store_.Write([&](memory::GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(recorded.id, w.PutOutcome(recorded));
      if (confirm) return Status::Ok();
      ReflectionInput in;
      in.task = task_node_;
      in.hardware = hardware_node_;
      in.compiler = hardware_.compiler;
      in.attempt = node.attempt;
      in.outcome = recorded;
      in.parent = parent;
      KOPE_ASSIGN_OR_RETURN(ReflectionResult r, Reflect(store_, w, in, options_.reflection));
      report_.insights_touched += static_cast<int>(r.insights.size());
      return Status::Ok();
    }));
    const NodeState* best_before = state_->Best();
    state_->AddOutcome(recorded);
    const NodeState* best = state_->Best();
    if (options_.observer != nullptr) {
      AttemptEvent event;
      event.attempt = internal::Summarize(*state_->Node(id), language_);
      event.confirmation = confirm;
      event.new_best = best != nullptr && best->attempt.id == id && best != best_before;
      event.attempts_used = state_->RunAttempts() + failed_;
      event.attempts_budget = state_->config().budgets.attempts;
      if (best != nullptr) event.best_speedup = best->speedup();
      event.tokens = state_->RunPromptTokens() + state_->RunCompletionTokens() + pending_prompt_ +
                     pending_completion_;
      event.elapsed_seconds = Now() - start_;
      const double budget_s = state_->config().budgets.seconds;
      event.seconds_left = budget_s > 0 ? std::max(0.0, budget_s - event.elapsed_seconds) : -1;
      options_.observer->OnAttempt(event);
    }
    return Status::Ok();
  }

  Status Finish() {
    report_.prompt_tokens = state_->RunPromptTokens() + pending_prompt_;
    report_.completion_tokens = state_->RunCompletionTokens() + pending_completion_;
    KOPE_RETURN_IF_ERROR(FillReport(store_, *state_, &report_));
    report_.wall_seconds = Now() - start_;
    report_.eval_seconds = eval_seconds_;
    report_.orchestration_seconds =
        std::max(0.0, report_.wall_seconds - eval_seconds_ - model_seconds_);
    if (options_.observer != nullptr) options_.observer->OnFinish(report_);
    return Status::Ok();
  }

  memory::GraphStore& store_;
  Backend& backend_;
  const Task& task_;
  Proposer& proposer_;
  const EpisodeOptions& options_;

  std::string language_;
  std::unique_ptr<LocalEvaluator> local_;  // without options_.evaluator: runners kept loaded
  HardwareInfo hardware_;
  memory::TaskNode task_node_;
  memory::HardwareNode hardware_node_;
  std::optional<EpisodeState> state_;
  EpisodeReport report_;
  bool done_ = false;
  bool fresh_blocked_ = false;
  double start_ = 0;
  double eval_seconds_ = 0;
  double model_seconds_ = 0;
  int failed_ = 0;
  int consecutive_failed_ = 0;
  int64_t pending_prompt_ = 0;
  int64_t pending_completion_ = 0;
  double pending_cost_ = 0;  // of the tokens above
};

}  // namespace

Result<EpisodeReport> RunEpisode(memory::GraphStore& store, Backend& backend, const Task& task,
                                 Proposer& proposer, const EpisodeOptions& options) {
  Episode episode(store, backend, task, proposer, options);
  return episode.Run();
}

Result<EpisodeReport> ReadRunReport(memory::GraphStore& store, NodeId run_id) {
  KOPE_ASSIGN_OR_RETURN(memory::RunNode run, store.GetRun(run_id));
  KOPE_ASSIGN_OR_RETURN(memory::TaskNode task, store.GetTask(run.task_id));
  KOPE_ASSIGN_OR_RETURN(memory::HardwareNode hardware, store.GetHardware(run.hardware_id));
  RunConfig config = internal::ParseRunConfig(run.config_json);
  EpisodeState state(run_id, config);
  KOPE_RETURN_IF_ERROR(state.Load(store, run.task_id, run.hardware_id, 0));
  EpisodeReport report;
  report.run_id = run_id;
  report.task_id = run.task_id;
  report.hardware_id = run.hardware_id;
  report.task = task.name;
  report.family = task.op_family;
  report.backend = hardware.backend;
  report.device = hardware.device;
  report.proposer = config.proposer;
  report.language = config.language;
  report.label = run.label;
  report.resumed = true;
  report.stop_reason = state.ReplayStop(0, 0);
  report.prompt_tokens = state.RunPromptTokens();
  report.completion_tokens = state.RunCompletionTokens();
  KOPE_RETURN_IF_ERROR(FillReport(store, state, &report));
  return report;
}

}  // namespace kope::agent
