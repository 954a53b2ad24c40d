// Insights (the list, searchable, and one with its evidence), full-text search over the
// graph, and deployment workloads with the tasks profiled out of them and the reports of their
// validations (`kope deploy`).
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "kope/deploy/in_model.h"
#include "node_json.h"
#include "views.h"

namespace kope::serve::internal {
namespace {

using memory::GraphStore;
using memory::NodeId;

Result<std::vector<memory::SearchKind>> ParseKinds(const std::string& text) {
  std::vector<memory::SearchKind> kinds;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    bool known = false;
    for (memory::SearchKind k : {memory::SearchKind::kAttempt, memory::SearchKind::kInsight,
                                 memory::SearchKind::kError, memory::SearchKind::kTask}) {
      if (memory::SearchKindName(k) == name) {
        kinds.push_back(k);
        known = true;
      }
    }
    if (!known) {
      return Status::InvalidArgument("unknown search kind '" + name +
                                     "' (attempt, insight, error, task)");
    }
  }
  return kinds;
}

// Where a hit leads: the attempt of an error outcome, the node itself otherwise.
json HitJson(GraphStore& store, const memory::SearchHit& hit) {
  json j = {{"kind", memory::SearchKindName(hit.kind)},
            {"node", memory::FormatNodeRef(hit.node)},
            {"id", hit.node.id},
            {"relevance", hit.relevance},
            {"text", hit.text},
            {"attempt", nullptr}};
  if (hit.kind == memory::SearchKind::kAttempt) j["attempt"] = hit.node.id;
  if (hit.kind == memory::SearchKind::kError) {
    Result<memory::OutcomeNode> o = store.GetOutcome(hit.node.id);
    if (o.ok()) j["attempt"] = o->attempt_id;
  }
  return j;
}

json Insights(const std::vector<memory::InsightNode>& insights) {
  json out = json::array();
  for (const memory::InsightNode& i : insights) out.push_back(InsightJson(i));
  return out;
}

}  // namespace

Result<std::vector<memory::InsightNode>> AllInsights(GraphStore& store) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::TaskNode> tasks, store.ListTasks(""));
  std::set<std::string> families = {""};
  for (const memory::TaskNode& t : tasks) families.insert(t.op_family);
  std::map<NodeId, memory::InsightNode> by_id;
  for (const std::string& family : families) {
    memory::InsightQuery query;
    query.op_family = family;
    query.limit = 1 << 30;
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::RankedInsight> ranked, store.FindInsights(query));
    for (memory::RankedInsight& r : ranked) by_id.emplace(r.insight.id, std::move(r.insight));
  }
  std::vector<memory::InsightNode> out;
  out.reserve(by_id.size());
  for (auto& [id, insight] : by_id) out.push_back(std::move(insight));
  return out;
}

Result<json> InsightsView(GraphStore& store, const Params& params, NodeId) {
  KOPE_ASSIGN_OR_RETURN(int64_t limit, params.Int("limit", 200, 1, 10000));
  const std::string q = params.Text("q"), family = params.Text("family");
  const std::string kind = params.Text("kind");
  std::vector<memory::InsightNode> insights;
  if (!q.empty()) {  // ranked by the full-text search, then read whole
    memory::SearchQuery query;
    query.text = q;
    query.kinds = {memory::SearchKind::kInsight};
    query.op_family = family;
    query.limit = static_cast<int>(limit);
    query.window = std::max(500, static_cast<int>(limit));
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::SearchHit> hits, store.Search(query));
    for (const memory::SearchHit& h : hits) {
      KOPE_ASSIGN_OR_RETURN(memory::InsightNode i, store.GetInsight(h.node.id));
      insights.push_back(std::move(i));
    }
  } else {
    KOPE_ASSIGN_OR_RETURN(insights, AllInsights(store));
    std::stable_sort(insights.begin(), insights.end(), [](const auto& a, const auto& b) {
      return a.support - a.contradiction > b.support - b.contradiction;
    });
  }
  std::erase_if(insights, [&](const memory::InsightNode& i) {
    return (!family.empty() && i.scope.op_family != family) || (!kind.empty() && i.kind != kind);
  });
  const size_t total = insights.size();
  if (insights.size() > static_cast<size_t>(limit)) insights.resize(static_cast<size_t>(limit));
  return json{{"total", total}, {"query", q}, {"insights", Insights(insights)}};
}

Result<json> InsightView(GraphStore& store, const Params& params, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(int64_t limit, params.Int("limit", 500, 1, 100000));
  KOPE_ASSIGN_OR_RETURN(memory::InsightNode insight, store.GetInsight(id));
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::EvidenceEdge> edges, store.Evidence(id));
  json evidence = json::array();
  for (const memory::EvidenceEdge& e : edges) {
    if (evidence.size() >= static_cast<size_t>(limit)) break;
    json row = {{"outcome", e.outcome_id},
                {"relation", memory::EvidenceRelationName(e.relation)},
                {"effect", e.effect},
                {"created_at", e.created_at},
                {"attempt", nullptr}};
    Result<memory::OutcomeNode> o = store.GetOutcome(e.outcome_id);
    if (o.ok()) {
      row["attempt"] = o->attempt_id;
      row["verdict"] = o->verdict;
      row["speedup"] = o->speedup ? json(*o->speedup) : json();
    }
    evidence.push_back(std::move(row));
  }
  json j = InsightJson(insight);
  j["evidence"] = evidence;
  j["evidence_total"] = edges.size();
  return j;
}

Result<json> SearchView(GraphStore& store, const Params& params, NodeId) {
  memory::SearchQuery query;
  query.text = params.Text("q");
  if (query.text.find_first_not_of(" \t") == std::string::npos) {
    return Status::InvalidArgument("parameter 'q' (the words to search for) is required");
  }
  KOPE_ASSIGN_OR_RETURN(query.kinds, ParseKinds(params.Text("kinds")));
  KOPE_ASSIGN_OR_RETURN(bool any, params.Bool("any", false));
  KOPE_ASSIGN_OR_RETURN(int64_t limit, params.Int("limit", 20, 1, 1000));
  query.match_all = !any;
  query.op_family = params.Text("family");
  query.limit = static_cast<int>(limit);
  query.window = std::max(500, query.limit);
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::SearchHit> hits, store.Search(query));
  json rows = json::array();
  for (const memory::SearchHit& h : hits) rows.push_back(HitJson(store, h));
  return json{{"query", query.text}, {"hits", rows}};
}

json FiguresJson(const std::vector<deploy::EntryFigure>& figures) {
  json rows = json::array();
  for (const deploy::EntryFigure& f : figures) {
    rows.push_back({{"entry", f.entry},
                    {"batch", f.batch},
                    {"phase", f.phase},
                    {"unpatched", f.unpatched},
                    {"patched", f.patched},
                    {"speedup", f.speedup},
                    {"noise", f.noise},
                    {"win", f.win},
                    {"loss", f.loss}});
  }
  return rows;
}

// A deployment report as the page shows it: the figures of all accepted patches together, each
// candidate tried with its verdict, reason and figures alone; or why the report cannot be read.
json DeploymentJson(const memory::DeploymentRecord& d) {
  json j = {{"id", d.id}, {"created_at", d.created_at}};
  Result<deploy::Validation> v =
      deploy::ParseValidation(d.report_json, "deployment " + std::to_string(d.id));
  if (!v.ok()) {
    j["error"] = v.status().message();
    return j;
  }
  json trials = json::array();
  for (const deploy::InModelTrial& t : v->trials) {
    trials.push_back({{"task", t.task},
                      {"attempt", t.attempt == 0 ? json() : json(t.attempt)},
                      {"kind", t.kind},
                      {"installed", t.installed},
                      {"passed_gate", t.passed_gate},
                      {"accepted", t.accepted},
                      {"reason", t.reason},
                      {"e2e", FiguresJson(t.e2e)}});
  }
  j["patches"] = v->patches;
  j["dropped"] = v->dropped;
  j["artifact"] = v->artifact;
  j["e2e"] = FiguresJson(v->e2e);
  j["trials"] = trials;
  return j;
}

Result<json> WorkloadsView(GraphStore& store, const Params&, NodeId) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::WorkloadNode> workloads, store.ListWorkloads());
  json rows = json::array();
  for (const memory::WorkloadNode& w : workloads) {
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::FromWorkloadEdge> tasks, store.WorkloadTasks(w.id));
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::DeploymentRecord> deployments,
                          store.WorkloadDeployments(w.id));
    json row = WorkloadJson(w);
    row["tasks"] = tasks.size();
    row["deployments"] = deployments.size();
    rows.push_back(std::move(row));
  }
  return json{{"workloads", rows}};
}

Result<json> WorkloadView(GraphStore& store, const Params&, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::WorkloadNode workload, store.GetWorkload(id));
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::FromWorkloadEdge> edges, store.WorkloadTasks(id));
  json tasks = json::array();
  for (const memory::FromWorkloadEdge& e : edges) {
    KOPE_ASSIGN_OR_RETURN(memory::TaskNode task, store.GetTask(e.task_id));
    memory::BestQuery best;
    best.task_id = task.id;
    best.limit = 1;
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> top, store.BestAttempts(best));
    json row = {{"task", TaskJson(task)},
                {"phases", e.phases},
                {"weight", e.weight},
                {"attrs", ParseObject(e.attrs_json)},
                {"best", nullptr}};
    if (!top.empty()) row["best"] = AttemptBrief(top.front());
    tasks.push_back(std::move(row));
  }
  std::sort(tasks.begin(), tasks.end(),
            [](const json& a, const json& b) { return a["weight"] > b["weight"]; });
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::DeploymentRecord> records,
                        store.WorkloadDeployments(id));
  json deployments = json::array();
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    deployments.push_back(DeploymentJson(*it));  // newest first
  }
  json j = WorkloadJson(workload);
  j["tasks"] = tasks;
  j["deployments"] = deployments;
  return j;
}

}  // namespace kope::serve::internal
