// Episode: the optimization of one task on one backend, within budgets, recorded as it goes.
//
// The loop: pick a node to expand (node_selection.h), ask the proposer for a candidate, record
// the attempt (with its parent, decision, proposer and tokens), evaluate it with the screening
// policy, record the outcome and reflect on it (reflection.h) in one transaction, and when a
// valid candidate's screened speedup beats the best's (its screened or, when lower, its confirmed
// speedup) by `min_improvement`, re-time it with the confirming policy (a second outcome of the
// same attempt); it becomes the best when its confirmed speedup is the highest confirmed one.
// (Screened figures are compared with screened ones, confirmed with confirmed: the two policies do
// not measure alike.) The search ranks nodes by their screened speedups. Repeat until a budget is
// spent or a stop rule holds:
//   attempts    the run holds `budgets.attempts` attempts (proposals that failed in this
//               session count too);
//   tokens      the run's attempts (and this session's failed proposals) spent `budgets.tokens`;
//   time        this session ran `budgets.seconds` of wall time (counted per session);
//   speed_of_light  the best reached `stop.speed_of_light` of the roofline floor;
//   no_improvement  `stop.patience` attempts were recorded after the best one;
//   exhausted   the proposer has nothing new to offer from any node nor a fresh start;
//   proposal_failures  `stop.max_failed_proposals` proposals in a row failed;
//   cancelled   the cancel flag was raised (the evaluation in flight finishes first);
//   error       the evaluator or the proposer could not do its part (report.error says why).
//
// The graph is the journal. An attempt is recorded before it is evaluated; an attempt with an
// outcome is never evaluated again; a candidate whose source already has an outcome for this task
// and hardware (from any run) is not evaluated either: its attempt is reused as a node. So an
// episode interrupted at any point (Ctrl-C, a crash, SIGKILL) resumes from the graph: the run to
// continue is `run_id`, or, with `resume`, the latest run of this task and hardware with the same
// label, proposer and language choice whose recorded attempts do not yet meet a stop rule (the
// attempt, token, speed-of-light and patience rules are replayed over them); its unevaluated
// attempt is evaluated first and its pending confirmation made, then the loop goes on.
//
// Outcomes flagged `faster_than_roofline`, or `wall_clock_mismatch` when timed with the
// confirming policy, are recorded as flagged and never become the best
// (kope/record/graph_nodes.h); a confirmation flagged only for the wall clock is repeated once.
// Flagged nodes may still be expanded. Other flags (speedup_above_10x, unstable_timing,
// within_noise) are kept in the evidence and shown in the report.
//
// Thread safety: RunEpisode uses its store, backend and proposer from the calling thread only
// (plus the evaluator's own threads); several episodes may run at once on one store and one
// backend, each with its own proposer. Status errors: the store cannot be written, the backend
// cannot describe its hardware, the task has no baseline in the backend's language, the language
// choice does not fit the task or the backend (InvalidArgument); everything
// that goes wrong after the run exists ends the episode with stop reason "error" instead.
#ifndef KOPE_AGENT_EPISODE_H_
#define KOPE_AGENT_EPISODE_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/agent/candidate_evaluator.h"
#include "kope/agent/proposer.h"
#include "kope/agent/reflection.h"
#include "kope/backend/backend.h"
#include "kope/eval/evaluator.h"
#include "kope/memory/graph_store.h"
#include "kope/task/task.h"

namespace kope::agent {

struct Budgets {
  int attempts = 30;
  int64_t tokens = 0;  // 0: unlimited
  double seconds = 0;  // 0: unlimited
};

struct StopRules {
  double speed_of_light = 0.9;    // fraction of the roofline floor; 0: never
  int patience = 12;              // attempts after the best; 0: never
  double min_improvement = 0.02;  // a screened gain that earns a confirmation (and counts as one)
  int max_failed_proposals = 3;   // in a row
};

// One attempt as the report shows it.
struct AttemptSummary {
  memory::NodeId id = 0;
  memory::NodeId parent_id = 0;
  memory::NodeId run_id = 0;
  std::string proposer;
  std::string language;  // what it is written in: "cpp", "cuda", "triton", "torch"
  std::string decision;
  std::vector<std::string> classes;
  std::string source_hash;
  std::string verdict;  // of the latest outcome; "" when not evaluated
  std::string message;  // the outcome's error message, first line
  std::optional<double> speedup;
  std::optional<double> roofline;
  std::optional<double> time_ms;
  std::vector<std::string> flags;
  bool flagged = false;
  bool confirmed = false;  // the latest outcome used the confirming policy
  int64_t tokens = 0;
};

struct EpisodeReport {
  memory::NodeId run_id = 0;
  memory::NodeId task_id = 0;
  memory::NodeId hardware_id = 0;
  std::string task;
  std::string family;
  std::string backend;
  std::string device;
  std::string proposer;
  std::string language;  // the run's choice: "" the backend's own, "triton", "torch", "alternate"
  std::string label;
  bool resumed = false;
  std::string stop_reason;
  std::string error;  // stop_reason "error": what failed

  std::vector<AttemptSummary> attempts;  // the run's attempts, by id
  int valid_attempts = 0;
  int session_attempts = 0;     // recorded in this session
  int session_evaluations = 0;  // evaluations made in this session (confirmations included)
  int failed_proposals = 0;     // this session
  int reused = 0;               // proposals whose source had an outcome already (this session)
  int64_t prompt_tokens = 0;    // the run's, with this session's failed proposals
  int64_t completion_tokens = 0;
  double cost_usd = 0;  // this session's
  int insights_touched = 0;

  std::optional<AttemptSummary> best;  // may come from an earlier run of the same task
  std::string best_source;
  double baseline_roofline = 0;  // the baseline's fraction of the roofline, when known

  double wall_seconds = 0;           // this session
  double eval_seconds = 0;           // inside Evaluator::Evaluate, this session
  double orchestration_seconds = 0;  // the rest: proposing, selecting, recording, reflecting

  int64_t tokens() const { return prompt_tokens + completion_tokens; }
};

struct AttemptEvent {
  AttemptSummary attempt;
  bool new_best = false;
  bool confirmation = false;  // the event is a confirming re-timing
  int attempts_used = 0;
  int attempts_budget = 0;
  std::optional<double> best_speedup;
  int64_t tokens = 0;
  double elapsed_seconds = 0;
  double seconds_left = -1;  // -1: no time budget
};

// Receives an episode's progress. Called from the episode's thread.
class EpisodeObserver {
 public:
  virtual ~EpisodeObserver() = default;
  virtual void OnStart(const EpisodeReport& state) { (void)state; }
  // A short line on what is happening now ("evaluating a12: verify check[1] trial 3/5").
  virtual void OnActivity(std::string_view line) { (void)line; }
  virtual void OnAttempt(const AttemptEvent& event) { (void)event; }
  virtual void OnFinish(const EpisodeReport& report) { (void)report; }
};

struct EpisodeOptions {
  Budgets budgets;
  StopRules stop;
  std::string label = "optimize";
  // What the proposer writes (candidate_language.h): "" or the backend's language, "triton",
  // "torch" (a PyTorch task only) or "alternate". Runs are resumed only with the same choice; a
  // run resumed by id keeps its own.
  std::string language;
  bool resume = true;         // continue the latest unfinished matching run
  memory::NodeId run_id = 0;  // continue exactly this run (it must be of this task)
  // With `resume`: when the latest matching run is finished, report it and do nothing.
  bool reuse_finished = false;
  int prior_nodes = 3;  // best attempts of earlier runs of this task offered as nodes; 0: none
  double exploration = 0.3;
  EvalOptions eval;     // the screening options; timing and progress are set by the episode
  bool confirm = true;  // re-time a new best with TimingPolicy::Confirm()
  ReflectionOptions reflection;
  // Extra fields recorded in the run's configuration (a JSON object), e.g. the provider.
  std::string config_json = "{}";
  const std::atomic<bool>* cancel = nullptr;  // not owned
  EpisodeObserver* observer = nullptr;        // not owned
  // Where candidates are evaluated (not owned; shared by episodes that run at once, so
  // thread-safe); null: here, on the episode's backend (LocalEvaluator). The run's hardware is
  // the backend's either way.
  CandidateEvaluator* evaluator = nullptr;
};

Result<EpisodeReport> RunEpisode(memory::GraphStore& store, Backend& backend, const Task& task,
                                 Proposer& proposer, const EpisodeOptions& options);

// The report of a recorded run, read from the graph (no evaluation, no proposer); its stop
// reason is the rule that the recorded attempts meet under the run's recorded budgets and rules
// ("" when none does: the run can be resumed).
Result<EpisodeReport> ReadRunReport(memory::GraphStore& store, memory::NodeId run_id);

}  // namespace kope::agent

#endif  // KOPE_AGENT_EPISODE_H_
