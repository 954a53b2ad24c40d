#include "episode_state.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "kope/agent/candidate_language.h"
#include "kope/eval/outcome.h"
#include "kope/record/graph_nodes.h"

namespace kope::agent::internal {
namespace {

using json = nlohmann::json;
using memory::NodeId;

bool ValidOutcome(const memory::OutcomeNode& o) {
  return o.verdict == memory::kVerdictValid && o.speedup && *o.speedup > 0;
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

std::vector<std::string> FlagsOf(const memory::OutcomeNode& o) {
  std::vector<std::string> flags;
  json e = json::parse(o.evidence_json, nullptr, false);
  if (e.is_object() && e.contains("flags") && e["flags"].is_array()) {
    for (const json& f : e["flags"]) {
      if (f.is_string()) flags.push_back(f.get<std::string>());
    }
  }
  return flags;
}

bool Has(const std::vector<std::string>& flags, std::string_view flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

}  // namespace

std::string RunConfigJson(const RunConfig& c, const std::string& extra_json) {
  json j = json::parse(extra_json, nullptr, false);
  if (!j.is_object()) j = json::object();
  j["proposer"] = c.proposer;
  if (!c.model.empty()) j["model"] = c.model;
  j["label"] = c.label;
  if (!c.language.empty()) j["language"] = c.language;
  j["budgets"] = {{"attempts", c.budgets.attempts},
                  {"tokens", c.budgets.tokens},
                  {"seconds", c.budgets.seconds}};
  j["stop"] = {{"speed_of_light", c.stop.speed_of_light},
               {"patience", c.stop.patience},
               {"min_improvement", c.stop.min_improvement},
               {"max_failed_proposals", c.stop.max_failed_proposals}};
  j["confirm"] = c.confirm;
  return j.dump();
}

RunConfig ParseRunConfig(const std::string& json_text) {
  RunConfig c;
  json j = json::parse(json_text, nullptr, false);
  if (!j.is_object()) return c;
  c.proposer = j.value("proposer", "");
  c.model = j.value("model", "");
  c.label = j.value("label", "");
  c.language = j.value("language", "");
  c.confirm = j.value("confirm", true);
  if (j.contains("budgets") && j["budgets"].is_object()) {
    const json& b = j["budgets"];
    c.budgets.attempts = b.value("attempts", c.budgets.attempts);
    c.budgets.tokens = b.value("tokens", c.budgets.tokens);
    c.budgets.seconds = b.value("seconds", c.budgets.seconds);
  }
  if (j.contains("stop") && j["stop"].is_object()) {
    const json& s = j["stop"];
    c.stop.speed_of_light = s.value("speed_of_light", c.stop.speed_of_light);
    c.stop.patience = s.value("patience", c.stop.patience);
    c.stop.min_improvement = s.value("min_improvement", c.stop.min_improvement);
    c.stop.max_failed_proposals = s.value("max_failed_proposals", c.stop.max_failed_proposals);
  }
  return c;
}

bool NodeState::valid() const { return latest() != nullptr && ValidOutcome(*latest()); }

bool NodeState::confirmed() const {
  return latest() != nullptr && record::TimingPolicyOf(*latest()) == "confirm";
}

double NodeState::speedup() const { return valid() ? *latest()->speedup : 0; }

bool NodeState::AwaitsConfirmation() const {
  if (!valid()) return false;
  const memory::OutcomeNode& o = *latest();
  if (record::TimingPolicyOf(o) != "confirm") return !o.flagged;
  if (!o.flagged) return false;
  int confirmations = 0;
  for (const memory::OutcomeNode& x : outcomes)
    confirmations += record::TimingPolicyOf(x) == "confirm";
  const std::vector<std::string> flags = FlagsOf(o);
  return confirmations < 2 && Has(flags, kFlagWallClockMismatch) &&
         !Has(flags, kFlagFasterThanRoofline) && !Has(flags, kFlagTimedFasterThanVerified);
}

double NodeState::screened_speedup() const {
  if (!valid()) return 0;
  const memory::OutcomeNode& first = outcomes.front();
  return ValidOutcome(first) ? *first.speedup : speedup();
}

Status EpisodeState::Load(memory::GraphStore& store, NodeId task_id, NodeId hardware_id,
                          int prior_nodes) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> views, store.RunAttempts(run_id_));
  for (const memory::AttemptView& view : views) {
    AddAttempt(view.attempt);
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::OutcomeNode> outcomes,
                          store.Outcomes(view.attempt.id));
    for (const memory::OutcomeNode& o : outcomes) AddOutcome(o);
  }
  if (prior_nodes > 0 && task_id != 0 && hardware_id != 0) {
    memory::BestQuery query;
    query.task_id = task_id;
    query.hardware_id = hardware_id;
    query.limit = prior_nodes + static_cast<int>(nodes_.size());
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> best, store.BestAttempts(query));
    int added = 0;
    for (const memory::AttemptView& view : best) {
      if (added >= prior_nodes) break;
      if (nodes_.count(view.attempt.id) > 0) continue;
      AddPrior(view);
      KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> children,
                            store.Children(view.attempt.id));
      NodeState& node = nodes_[view.attempt.id];
      for (const memory::AttemptView& child : children) {
        node.expansions++;
        if (child.outcome && ValidOutcome(*child.outcome)) {
          node.gain_sum += ChildGain(node.screened_speedup(), *child.outcome->speedup);
        }
      }
      ++added;
    }
  }
  return Status::Ok();
}

void EpisodeState::AddAttempt(const memory::AttemptNode& attempt) {
  NodeState& node = nodes_[attempt.id];
  node.attempt = attempt;
  node.in_run = attempt.run_id == run_id_;
  if (!node.in_run) return;
  if (attempt.parent_id == 0) {
    ++fresh_starts_;
  } else if (auto it = nodes_.find(attempt.parent_id); it != nodes_.end()) {
    it->second.expansions++;
  }
}

void EpisodeState::AddOutcome(const memory::OutcomeNode& outcome) {
  auto it = nodes_.find(outcome.attempt_id);
  if (it == nodes_.end()) return;
  NodeState& node = it->second;
  const bool first = node.outcomes.empty();
  const NodeState* best_before = first ? Best() : nullptr;
  const double best_speedup = best_before != nullptr ? best_before->screened_speedup() : 0;
  node.outcomes.push_back(outcome);
  if (!first || !node.in_run) return;
  const double s = ValidOutcome(outcome) ? *outcome.speedup : 0;
  if (node.attempt.parent_id == 0) {
    fresh_gain_sum_ += s <= 0 ? 0 : (best_speedup > 0 ? std::min(1.0, s / best_speedup) : 1.0);
  } else if (auto p = nodes_.find(node.attempt.parent_id); p != nodes_.end()) {
    p->second.gain_sum += ChildGain(p->second.screened_speedup(), s);
  }
}

void EpisodeState::AddPrior(const memory::AttemptView& view) {
  if (nodes_.count(view.attempt.id) > 0) return;
  NodeState& node = nodes_[view.attempt.id];
  node.attempt = view.attempt;
  node.in_run = view.attempt.run_id == run_id_;
  if (view.outcome) node.outcomes.push_back(*view.outcome);
}

void EpisodeState::RecordExpansion(NodeId parent) {
  if (parent == 0) return;  // fresh starts are counted by their attempts
  auto it = nodes_.find(parent);
  if (it != nodes_.end()) it->second.expansions++;
}

void EpisodeState::MarkExhausted(NodeId node) {
  auto it = nodes_.find(node);
  if (it != nodes_.end()) it->second.exhausted = true;
}

const NodeState* EpisodeState::Unevaluated(NodeId after) const {
  for (auto it = nodes_.upper_bound(after); it != nodes_.end(); ++it) {
    if (it->second.in_run && !it->second.evaluated()) return &it->second;
  }
  return nullptr;
}

const NodeState* EpisodeState::Best() const {
  const NodeState* best = nullptr;
  for (const auto& [id, node] : nodes_) {
    if (!node.valid() || node.latest()->flagged) continue;
    if (config_.confirm && node.in_run && !node.confirmed()) continue;
    if (best == nullptr || node.speedup() > best->speedup()) best = &node;
  }
  return best;
}

const NodeState* EpisodeState::PendingConfirmation() const {
  if (!config_.confirm) return nullptr;
  const NodeState* best = Best();
  // Screened speedups are compared with screened ones (the confirming policy measures longer and
  // does not give the same figure), but a best whose screening was luckier than its confirmation
  // must not hide the candidates in between: the bar is the lower of its two figures.
  const double bar = best != nullptr ? std::min(best->screened_speedup(), best->speedup()) *
                                           (1 + config_.stop.min_improvement)
                                     : 0;
  const NodeState* pending = nullptr;
  for (const auto& [id, node] : nodes_) {
    if (!node.in_run || !node.AwaitsConfirmation()) continue;
    if (node.screened_speedup() <= bar) continue;
    if (pending == nullptr || node.screened_speedup() > pending->screened_speedup()) {
      pending = &node;
    }
  }
  return pending;
}

const NodeState* EpisodeState::Node(NodeId id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

bool EpisodeState::Improved(NodeId id) const {
  const NodeState* node = Node(id);
  if (node == nullptr || !node->valid()) return false;
  const NodeState* parent = Node(node->attempt.parent_id);
  if (node->attempt.parent_id == 0 || parent == nullptr) return true;
  return node->screened_speedup() > parent->screened_speedup() * (1 + config_.stop.min_improvement);
}

SelectionInput EpisodeState::Arms(bool fresh_available, double exploration) const {
  SelectionInput in;
  in.exploration = exploration;
  in.fresh_available = fresh_available;
  in.fresh_starts = fresh_starts_;
  in.fresh_gain_sum = fresh_gain_sum_;
  for (const auto& [id, node] : nodes_) {
    // Flagged nodes are expanded too (they never become the best): a kernel whose timing looked
    // suspicious is still a correct kernel, and its children are judged on their own.
    if (!node.valid()) continue;
    NodeArm arm;
    arm.id = id;
    arm.speedup = node.screened_speedup();
    arm.expansions = node.expansions;
    arm.gain_sum = node.gain_sum;
    arm.exhausted = node.exhausted;
    in.nodes.push_back(arm);
  }
  return in;
}

int EpisodeState::RunAttempts() const {
  int n = 0;
  for (const auto& [id, node] : nodes_) n += node.in_run ? 1 : 0;
  return n;
}

int64_t EpisodeState::RunPromptTokens() const {
  int64_t n = 0;
  for (const auto& [id, node] : nodes_) n += node.in_run ? node.attempt.prompt_tokens : 0;
  return n;
}

int64_t EpisodeState::RunCompletionTokens() const {
  int64_t n = 0;
  for (const auto& [id, node] : nodes_) n += node.in_run ? node.attempt.completion_tokens : 0;
  return n;
}

int EpisodeState::AttemptsSinceBest() const {
  const NodeState* best = Best();
  int n = 0;
  for (const auto& [id, node] : nodes_) {
    if (!node.in_run) continue;
    if (best == nullptr || !best->in_run || id > best->attempt.id) ++n;
  }
  return n;
}

std::string EpisodeState::ReplayStop(int extra_attempts, int64_t extra_tokens) const {
  if (Unevaluated() != nullptr || PendingConfirmation() != nullptr) return "";
  const Budgets& b = config_.budgets;
  if (b.attempts > 0 && RunAttempts() + extra_attempts >= b.attempts) return "attempts";
  if (b.tokens > 0 && RunPromptTokens() + RunCompletionTokens() + extra_tokens >= b.tokens) {
    return "tokens";
  }
  const NodeState* best = Best();
  if (best != nullptr && config_.stop.speed_of_light > 0 && best->latest()->roofline &&
      *best->latest()->roofline >= config_.stop.speed_of_light) {
    return "speed_of_light";
  }
  if (config_.stop.patience > 0 && AttemptsSinceBest() >= config_.stop.patience) {
    return "no_improvement";
  }
  return "";
}

std::vector<const NodeState*> EpisodeState::RunNodes() const {
  std::vector<const NodeState*> out;
  for (const auto& [id, node] : nodes_) {
    if (node.in_run) out.push_back(&node);
  }
  return out;
}

AttemptSummary Summarize(const NodeState& node, std::string_view native) {
  AttemptSummary s;
  s.id = node.attempt.id;
  s.parent_id = node.attempt.parent_id;
  s.run_id = node.attempt.run_id;
  s.proposer = node.attempt.proposer;
  s.language = LanguageOfProposer(s.proposer, native);
  s.decision = node.attempt.decision;
  s.classes = node.attempt.classes;
  s.source_hash = node.attempt.source_hash;
  s.tokens = node.attempt.prompt_tokens + node.attempt.completion_tokens;
  if (const memory::OutcomeNode* o = node.latest()) {
    s.verdict = o->verdict;
    s.message = FirstLine(o->error_message);
    s.speedup = o->speedup;
    s.roofline = o->roofline;
    s.time_ms = o->time_ms;
    s.flagged = o->flagged;
    s.confirmed = node.confirmed();
    s.flags = FlagsOf(*o);
  }
  return s;
}

}  // namespace kope::agent::internal
