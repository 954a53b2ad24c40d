// The state of one run, as the graph records it: its attempts and their outcomes, the best
// node, the nodes the search may expand, and the stop rules replayed over them. Internal to
// src/agent; not thread-safe (one episode owns it).
#ifndef KOPE_SRC_AGENT_EPISODE_STATE_H_
#define KOPE_SRC_AGENT_EPISODE_STATE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kope/agent/episode.h"
#include "kope/agent/node_selection.h"
#include "kope/memory/graph_store.h"

namespace kope::agent::internal {

// The budgets and rules a run was started with (its config JSON), and its proposer's name.
struct RunConfig {
  std::string proposer;
  std::string model;
  std::string label;
  std::string language;  // the candidate language choice; "" the backend's own
  Budgets budgets;
  StopRules stop;
  bool confirm = true;
};

std::string RunConfigJson(const RunConfig& config, const std::string& extra_json);
RunConfig ParseRunConfig(const std::string& json_text);

struct NodeState {
  memory::AttemptNode attempt;
  std::vector<memory::OutcomeNode> outcomes;  // by id
  bool in_run = false;     // an attempt of this run (else an earlier run's, offered as a node)
  int expansions = 0;      // children proposed from it
  double gain_sum = 0;     // their gains (node_selection.h)
  bool exhausted = false;  // the proposer has nothing new from it

  const memory::OutcomeNode* latest() const {
    return outcomes.empty() ? nullptr : &outcomes.back();
  }
  bool evaluated() const { return !outcomes.empty(); }
  bool valid() const;      // latest outcome valid with a speedup
  bool confirmed() const;  // latest outcome timed with the confirming policy
  // Valid and not yet confirmed: screened only and not flagged, or confirmed once with only the
  // wall-clock check tripped (a busy machine does that; the confirmation is repeated once).
  bool AwaitsConfirmation() const;
  double speedup() const;  // of the latest valid outcome, else 0
  // Of the first (screening) outcome while the latest is valid, else 0: what the search compares,
  // so that nodes measured with one policy are ranked against each other.
  double screened_speedup() const;
};

class EpisodeState {
 public:
  EpisodeState(memory::NodeId run_id, RunConfig config) : run_id_(run_id), config_(config) {}

  // Reads the run's attempts and outcomes, then the best `prior_nodes` attempts of the task on
  // the hardware from other runs.
  Status Load(memory::GraphStore& store, memory::NodeId task_id, memory::NodeId hardware_id,
              int prior_nodes);

  void AddAttempt(const memory::AttemptNode& attempt);
  void AddOutcome(const memory::OutcomeNode& outcome);
  // Offers a recorded attempt (of another run, or reused) as a node.
  void AddPrior(const memory::AttemptView& view);
  void RecordExpansion(memory::NodeId parent);  // a proposal from `parent` (0: a fresh start)
  void MarkExhausted(memory::NodeId node);

  // The run's first attempt without an outcome (after the attempt `after`), if any.
  const NodeState* Unevaluated(memory::NodeId after = 0) const;
  // The run's best screened-only candidate whose screened speedup beats the best's screened
  // speedup by `min_improvement`.
  const NodeState* PendingConfirmation() const;
  // The best node: valid, unflagged and (when the run confirms) confirmed; highest (confirmed)
  // speedup, lowest id on ties.
  const NodeState* Best() const;

  const NodeState* Node(memory::NodeId id) const;
  // Whether `node` improved on its parent (a root: whether it is valid).
  bool Improved(memory::NodeId id) const;

  SelectionInput Arms(bool fresh_available, double exploration) const;

  int RunAttempts() const;
  int64_t RunPromptTokens() const;
  int64_t RunCompletionTokens() const;
  // Attempts of the run recorded after the best (all of them when the best is not the run's).
  int AttemptsSinceBest() const;

  // The stop rule the recorded attempts meet ("" when none): attempts, tokens, speed_of_light,
  // no_improvement. `extra_attempts` and `extra_tokens` are this session's failed proposals.
  std::string ReplayStop(int extra_attempts, int64_t extra_tokens) const;

  // The run's attempts, by id.
  std::vector<const NodeState*> RunNodes() const;
  const RunConfig& config() const { return config_; }
  memory::NodeId run_id() const { return run_id_; }

 private:
  memory::NodeId run_id_;
  RunConfig config_;
  std::map<memory::NodeId, NodeState> nodes_;
  int fresh_starts_ = 0;
  double fresh_gain_sum_ = 0;
};

// The report's view of one node; `native` is the backend's language (candidate_language.h).
AttemptSummary Summarize(const NodeState& node, std::string_view native);

}  // namespace kope::agent::internal

#endif  // KOPE_SRC_AGENT_EPISODE_STATE_H_
