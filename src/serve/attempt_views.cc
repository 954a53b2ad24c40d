// Attempts and tasks: an attempt with its source, diff, outcomes, context and insights; the
// tasks, and one task's runs with the roofline position of its attempts.
#include <algorithm>
#include <set>

#include "node_json.h"
#include "views.h"

namespace kope::serve::internal {
namespace {

using memory::AttemptView;
using memory::GraphStore;
using memory::NodeId;

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// The `used` edges, each with a line that says what the item was.
Result<json> UsedJson(GraphStore& store, NodeId attempt) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::UsedEdge> used, store.UsedBy(attempt));
  json out = json::array();
  for (const memory::UsedEdge& u : used) {
    std::string what;
    if (u.target.kind == memory::NodeKind::kInsight) {
      Result<memory::InsightNode> insight = store.GetInsight(u.target.id);
      if (insight.ok()) what = insight->text;
    } else if (u.target.kind == memory::NodeKind::kAttempt) {
      Result<memory::AttemptNode> exemplar = store.GetAttempt(u.target.id);
      if (exemplar.ok()) what = FirstLine(exemplar->decision);
    }
    out.push_back({{"target", memory::FormatNodeRef(u.target)},
                   {"kind", memory::NodeKindName(u.target.kind)},
                   {"id", u.target.id},
                   {"section", u.section},
                   {"score", u.score},
                   {"tokens", u.tokens},
                   {"credit", u.credit ? json(*u.credit) : json()},
                   {"text", what}});
  }
  return out;
}

// The insights that the attempt's outcomes are evidence for or against.
Result<json> EvidenceFor(GraphStore& store, const std::vector<memory::OutcomeNode>& outcomes) {
  std::set<NodeId> ids;
  for (const memory::OutcomeNode& o : outcomes) ids.insert(o.id);
  json out = json::array();
  if (ids.empty()) return out;
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::InsightNode> insights, AllInsights(store));
  for (const memory::InsightNode& insight : insights) {
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::EvidenceEdge> edges, store.Evidence(insight.id));
    for (const memory::EvidenceEdge& e : edges) {
      if (ids.count(e.outcome_id) == 0) continue;
      out.push_back({{"insight", InsightJson(insight)},
                     {"outcome", e.outcome_id},
                     {"relation", memory::EvidenceRelationName(e.relation)},
                     {"effect", e.effect}});
    }
  }
  return out;
}

json Briefs(const std::vector<AttemptView>& views) {
  json out = json::array();
  for (const AttemptView& v : views) out.push_back(AttemptBrief(v));
  return out;
}

}  // namespace

Result<json> AttemptDetailView(GraphStore& store, const Params&, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::AttemptNode a, store.GetAttempt(id));
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::OutcomeNode> outcomes, store.Outcomes(id));
  memory::AttemptView view{a, std::nullopt};
  if (!outcomes.empty()) view.outcome = outcomes.back();
  json j = AttemptBrief(view);
  j["diff"] = a.diff;
  j["source_hash"] = a.source_hash;
  Result<std::string> source = store.GetSource(a.source_hash);
  j["source"] = source.ok() ? *source : "";
  json all = json::array();
  for (const memory::OutcomeNode& o : outcomes) all.push_back(OutcomeFull(o));
  j["outcomes"] = all;
  KOPE_ASSIGN_OR_RETURN(memory::TaskNode task, store.GetTask(a.task_id));
  KOPE_ASSIGN_OR_RETURN(memory::HardwareNode hw, store.GetHardware(a.hardware_id));
  j["task_node"] = TaskJson(task);
  j["hardware_node"] = HardwareJson(hw);
  j["parent_node"] = nullptr;
  if (a.parent_id != 0) {
    KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> lineage, store.Lineage(id));
    if (lineage.size() >= 2) j["parent_node"] = AttemptBrief(lineage[lineage.size() - 2]);
    j["lineage"] = Briefs(lineage);
  } else {
    j["lineage"] = Briefs({view});
  }
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> children, store.Children(id));
  j["children"] = Briefs(children);
  KOPE_ASSIGN_OR_RETURN(j["used"], UsedJson(store, id));
  KOPE_ASSIGN_OR_RETURN(j["insights"], EvidenceFor(store, outcomes));
  return j;
}

Result<json> TasksView(GraphStore& store, const Params& params, NodeId) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::TaskNode> tasks,
                        store.ListTasks(params.Text("family")));
  json out = json::array();
  for (const memory::TaskNode& t : tasks) out.push_back(TaskJson(t));
  return json{{"tasks", out}};
}

Result<json> TaskView(GraphStore& store, const Params& params, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(int64_t limit, params.Int("limit", 5000, 1, 200000));
  KOPE_ASSIGN_OR_RETURN(memory::TaskNode task, store.GetTask(id));
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::RunNode> runs, store.ListRuns(id));
  json run_list = json::array(), points = json::array();
  // Newest runs first, until `limit` attempts are in the chart.
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    run_list.push_back(RunJson(*it));
    if (points.size() >= static_cast<size_t>(limit)) continue;
    KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> attempts, store.RunAttempts(it->id));
    for (const AttemptView& v : attempts) {
      if (!v.outcome || v.outcome->verdict != memory::kVerdictValid || !v.outcome->roofline) {
        continue;
      }
      points.push_back({{"attempt", v.attempt.id},
                        {"run", v.attempt.run_id},
                        {"hardware", v.attempt.hardware_id},
                        {"roofline", *v.outcome->roofline},
                        {"speedup", v.outcome->speedup ? json(*v.outcome->speedup) : json()},
                        {"time_ms", v.outcome->time_ms ? json(*v.outcome->time_ms) : json()},
                        {"flagged", v.outcome->flagged}});
    }
  }
  std::sort(points.begin(), points.end(),
            [](const json& a, const json& b) { return a["attempt"] < b["attempt"]; });
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::FromWorkloadEdge> from, store.TaskWorkloads(id));
  json workloads = json::array();
  for (const memory::FromWorkloadEdge& e : from) {
    workloads.push_back({{"workload", e.workload_id}, {"phases", e.phases}, {"weight", e.weight}});
  }
  return json{{"task", TaskJson(task)},
              {"runs", run_list},
              {"roofline_points", points},
              {"workloads", workloads}};
}

}  // namespace kope::serve::internal
