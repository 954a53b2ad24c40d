// Runs: the list with its filters, one run's summary, its episode tree, its attempts since an
// id (the live view) and its charts.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "node_json.h"
#include "views.h"

namespace kope::serve::internal {
namespace {

using memory::AttemptView;
using memory::GraphStore;
using memory::NodeId;

bool Contains(const std::string& haystack, const std::string& needle) {
  return needle.empty() || haystack.find(needle) != std::string::npos;
}

bool Ranked(const std::optional<memory::OutcomeNode>& o) {
  return o.has_value() && o->verdict == memory::kVerdictValid && !o->flagged &&
         o->speedup.has_value();
}

// Counts, the best valid attempt, tokens, cost and the time span of a run's attempts.
json Summary(const std::vector<AttemptView>& attempts) {
  std::map<std::string, int64_t> verdicts;
  int64_t prompt = 0, completion = 0;
  double cost = 0;
  memory::UnixMillis last = 0;
  const AttemptView* best = nullptr;
  std::set<std::string> proposers;
  for (const AttemptView& v : attempts) {
    verdicts[v.outcome ? v.outcome->verdict : "none"]++;
    prompt += v.attempt.prompt_tokens;
    completion += v.attempt.completion_tokens;
    cost += v.attempt.cost_usd;
    last = std::max(last, v.attempt.created_at);
    if (!v.attempt.proposer.empty()) proposers.insert(v.attempt.proposer);
    if (Ranked(v.outcome) && (best == nullptr || *v.outcome->speedup > *best->outcome->speedup)) {
      best = &v;
    }
  }
  json j = {{"attempts", attempts.size()},     {"verdicts", verdicts}, {"prompt_tokens", prompt},
            {"completion_tokens", completion}, {"cost_usd", cost},     {"proposers", proposers},
            {"last_attempt_at", last},         {"best", nullptr}};
  if (best != nullptr) {
    j["best"] = {{"attempt", best->attempt.id},
                 {"speedup", *best->outcome->speedup},
                 {"roofline", best->outcome->roofline ? json(*best->outcome->roofline) : json()}};
  }
  return j;
}

// `kope bench` labels the runs of a suite "bench:NAME".
constexpr std::string_view kSuiteLabel = "bench:";

struct RunFilter {
  std::string task, family, hardware, proposer, label;
  memory::UnixMillis since = 0, until = 0;
};

bool Matches(const RunFilter& f, const memory::RunNode& run, const memory::TaskNode* task,
             const memory::HardwareNode* hw) {
  if (!f.task.empty() &&
      (task == nullptr || (task->name != f.task && std::to_string(task->id) != f.task))) {
    return false;
  }
  if (!f.family.empty() && (task == nullptr || task->op_family != f.family)) return false;
  if (!f.hardware.empty() &&
      (hw == nullptr ||
       (std::to_string(hw->id) != f.hardware && !Contains(hw->device, f.hardware) &&
        !Contains(hw->arch, f.hardware) && hw->backend != f.hardware))) {
    return false;
  }
  if (!Contains(RunProposer(run), f.proposer)) return false;
  if (!f.label.empty() && run.label != f.label) return false;
  if (f.since > 0 && run.started_at < f.since) return false;
  if (f.until > 0 && run.started_at >= f.until) return false;
  return true;
}

template <typename Node>
std::unordered_map<NodeId, Node> ById(std::vector<Node> nodes) {
  std::unordered_map<NodeId, Node> out;
  for (Node& n : nodes) out.emplace(n.id, std::move(n));
  return out;
}

template <typename Node>
const Node* Find(const std::unordered_map<NodeId, Node>& nodes, NodeId id) {
  auto it = nodes.find(id);
  return it == nodes.end() ? nullptr : &it->second;
}

json RunRow(const memory::RunNode& run, const memory::TaskNode* task,
            const memory::HardwareNode* hw) {
  json j = RunJson(run);
  j["task_name"] = task ? task->name : "";
  j["op_family"] = task ? task->op_family : "";
  j["device"] = hw ? hw->device : "";
  j["backend"] = hw ? hw->backend : "";
  return j;
}

}  // namespace

Result<json> StatsView(GraphStore& store, const Params&, NodeId) {
  KOPE_ASSIGN_OR_RETURN(memory::StoreStats s, store.Stats());
  return json{{"schema_version", s.schema_version},
              {"tasks", s.tasks},
              {"hardware", s.hardware},
              {"runs", s.runs},
              {"attempts", s.attempts},
              {"outcomes", s.outcomes},
              {"valid_outcomes", s.valid_outcomes},
              {"insights", s.insights},
              {"workloads", s.workloads},
              {"deployments", s.deployments},
              {"evidence_edges", s.evidence_edges},
              {"used_edges", s.used_edges},
              {"store_bytes", s.store_bytes}};
}

Result<json> FacetsView(GraphStore& store, const Params&, NodeId) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::TaskNode> tasks, store.ListTasks(""));
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::HardwareNode> hardware, store.ListHardware());
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::RunNode> runs, store.ListRuns(0));
  std::set<std::string> families, proposers, labels;
  json task_list = json::array(), hw_list = json::array();
  for (const memory::TaskNode& t : tasks) {
    families.insert(t.op_family);
    task_list.push_back({{"id", t.id}, {"name", t.name}, {"op_family", t.op_family}});
  }
  for (const memory::HardwareNode& h : hardware) hw_list.push_back(HardwareJson(h));
  for (const memory::RunNode& r : runs) {
    proposers.insert(RunProposer(r));
    labels.insert(r.label);
  }
  return json{{"tasks", task_list},
              {"families", families},
              {"hardware", hw_list},
              {"proposers", proposers},
              {"labels", labels}};
}

Result<json> RunsView(GraphStore& store, const Params& params, NodeId) {
  RunFilter f{params.Text("task"), params.Text("family"), params.Text("hardware"),
              params.Text("proposer"), params.Text("label")};
  KOPE_ASSIGN_OR_RETURN(f.since, params.Date("since"));
  KOPE_ASSIGN_OR_RETURN(f.until, params.Date("until"));
  KOPE_ASSIGN_OR_RETURN(int64_t limit, params.Int("limit", 50, 1, 500));
  KOPE_ASSIGN_OR_RETURN(int64_t offset, params.Int("offset", 0, 0, int64_t{1} << 40));
  KOPE_ASSIGN_OR_RETURN(auto tasks, store.ListTasks(""));
  KOPE_ASSIGN_OR_RETURN(auto hardware, store.ListHardware());
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::RunNode> runs, store.ListRuns(0));
  const auto task_by_id = ById(std::move(tasks));
  const auto hw_by_id = ById(std::move(hardware));
  std::vector<const memory::RunNode*> kept;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {  // newest first
    if (Matches(f, *it, Find(task_by_id, it->task_id), Find(hw_by_id, it->hardware_id))) {
      kept.push_back(&*it);
    }
  }
  json rows = json::array();
  for (size_t i = static_cast<size_t>(offset);
       i < kept.size() && rows.size() < static_cast<size_t>(limit); ++i) {
    const memory::RunNode& run = *kept[i];
    json row = RunRow(run, Find(task_by_id, run.task_id), Find(hw_by_id, run.hardware_id));
    KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> attempts, store.RunAttempts(run.id));
    row["summary"] = Summary(attempts);
    rows.push_back(std::move(row));
  }
  return json{{"total", kept.size()}, {"offset", offset}, {"limit", limit}, {"runs", rows}};
}

Result<json> SuitesView(GraphStore& store, const Params&, NodeId) {
  KOPE_ASSIGN_OR_RETURN(auto hardware, store.ListHardware());
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::RunNode> runs, store.ListRuns(0));
  const auto hw_by_id = ById(std::move(hardware));
  struct Suite {
    int64_t runs = 0;
    std::set<NodeId> tasks;
    std::set<std::string> proposers, devices;
    memory::UnixMillis first = 0, last = 0;
  };
  std::map<std::string, Suite> suites;
  for (const memory::RunNode& run : runs) {
    if (!run.label.starts_with(kSuiteLabel)) continue;
    Suite& s = suites[run.label];
    s.runs++;
    s.tasks.insert(run.task_id);
    s.proposers.insert(RunProposer(run));
    if (const memory::HardwareNode* hw = Find(hw_by_id, run.hardware_id)) {
      s.devices.insert(hw->device);
    }
    s.first = s.first == 0 ? run.started_at : std::min(s.first, run.started_at);
    s.last = std::max(s.last, run.started_at);
  }
  json rows = json::array();
  for (const auto& [label, s] : suites) {
    rows.push_back({{"label", label},
                    {"suite", label.substr(kSuiteLabel.size())},
                    {"runs", s.runs},
                    {"tasks", s.tasks.size()},
                    {"proposers", s.proposers},
                    {"devices", s.devices},
                    {"first_started_at", s.first},
                    {"last_started_at", s.last}});
  }
  return json{{"suites", rows}};
}

Result<json> RunView(GraphStore& store, const Params&, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::RunNode run, store.GetRun(id));
  KOPE_ASSIGN_OR_RETURN(memory::TaskNode task, store.GetTask(run.task_id));
  KOPE_ASSIGN_OR_RETURN(memory::HardwareNode hw, store.GetHardware(run.hardware_id));
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> attempts, store.RunAttempts(id));
  json j = RunRow(run, &task, &hw);
  j["task_node"] = TaskJson(task);
  j["hardware_node"] = HardwareJson(hw);
  j["summary"] = Summary(attempts);
  return j;
}

Result<json> RunTreeView(GraphStore& store, const Params&, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::RunNode run, store.GetRun(id));
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> attempts, store.RunAttempts(id));
  std::unordered_map<NodeId, size_t> index;
  for (size_t i = 0; i < attempts.size(); ++i) index[attempts[i].attempt.id] = i;
  std::vector<std::vector<NodeId>> children(attempts.size());
  std::vector<int> depth(attempts.size(), 0);
  for (size_t i = 0; i < attempts.size(); ++i) {  // by id: a parent comes before its children
    auto parent = index.find(attempts[i].attempt.parent_id);
    if (parent == index.end()) continue;
    children[parent->second].push_back(attempts[i].attempt.id);
    depth[i] = depth[parent->second] + 1;
  }
  json nodes = json::array();
  for (size_t i = 0; i < attempts.size(); ++i) {
    const memory::AttemptNode& a = attempts[i].attempt;
    json n = AttemptBrief(attempts[i]);
    n["order"] = i + 1;
    n["depth"] = depth[i];
    n["children"] = children[i];
    n["parent_in_run"] = index.count(a.parent_id) > 0;
    nodes.push_back(std::move(n));
  }
  json summary = Summary(attempts);
  return json{{"run", run.id}, {"best", summary["best"]}, {"nodes", nodes}};
}

Result<json> RunAttemptsView(GraphStore& store, const Params& params, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(int64_t after, params.Int("after", 0, 0, int64_t{1} << 62));
  KOPE_ASSIGN_OR_RETURN(memory::RunNode run, store.GetRun(id));
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> attempts, store.RunAttempts(run.id));
  json rows = json::array();
  for (size_t i = 0; i < attempts.size(); ++i) {
    if (attempts[i].attempt.id <= after) continue;
    json row = AttemptBrief(attempts[i]);
    row["order"] = i + 1;
    rows.push_back(std::move(row));
  }
  return json{{"run", run.id}, {"summary", Summary(attempts)}, {"attempts", rows}};
}

Result<json> RunChartsView(GraphStore& store, const Params& params, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(int64_t bins, params.Int("bins", 12, 1, 200));
  KOPE_ASSIGN_OR_RETURN(memory::RunNode run, store.GetRun(id));
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> attempts, store.RunAttempts(run.id));
  json progress = json::array(), tokens = json::array();
  std::vector<double> speedups;
  double best = 0;
  for (size_t i = 0; i < attempts.size(); ++i) {
    const AttemptView& v = attempts[i];
    const bool ranked = Ranked(v.outcome);
    if (ranked) {
      best = std::max(best, *v.outcome->speedup);
      speedups.push_back(*v.outcome->speedup);
    }
    progress.push_back({{"order", i + 1},
                        {"attempt", v.attempt.id},
                        {"speedup", ranked ? json(*v.outcome->speedup) : json()},
                        {"best", best > 0 ? json(best) : json()}});
    tokens.push_back({{"order", i + 1},
                      {"attempt", v.attempt.id},
                      {"prompt", v.attempt.prompt_tokens},
                      {"completion", v.attempt.completion_tokens},
                      {"cost_usd", v.attempt.cost_usd}});
  }
  json histogram = json::array();
  if (!speedups.empty()) {
    const auto [lo, hi] = std::minmax_element(speedups.begin(), speedups.end());
    const double width = *hi > *lo ? (*hi - *lo) / static_cast<double>(bins) : 1.0;
    std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
    for (double s : speedups) {
      size_t b = static_cast<size_t>(std::floor((s - *lo) / width));
      counts[std::min(b, counts.size() - 1)]++;
    }
    for (size_t b = 0; b < counts.size(); ++b) {
      histogram.push_back({{"from", *lo + width * static_cast<double>(b)},
                           {"to", *lo + width * static_cast<double>(b + 1)},
                           {"count", counts[b]}});
    }
  }
  return json{
      {"run", run.id}, {"progress", progress}, {"histogram", histogram}, {"tokens", tokens}};
}

}  // namespace kope::serve::internal
