// The JSON form of experience-graph nodes for `kope memory`.
#include "memory_nodes.h"

#include <string>

#include "kope/memory/outcome_json.h"

namespace kope::cli {
namespace {

using memory::AttemptView;
using memory::GraphStore;
using memory::NodeKind;
using memory::NodeRef;
using nlohmann::json;

json ParsedOrText(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

json OutcomeJsonValue(const memory::OutcomeNode& o) { return json::parse(memory::OutcomeJson(o)); }

json InsightJson(const memory::InsightNode& i) {
  const memory::InsightScope& s = i.scope;
  return {{"id", i.id},
          {"key", i.key},
          {"kind", i.kind},
          {"text", i.text},
          {"scope",
           {{"op_family", s.op_family},
            {"backend", s.backend},
            {"device", s.device},
            {"arch", s.arch},
            {"compiler", s.compiler},
            {"size_min", s.size_min},
            {"size_max", s.size_max}}},
          {"classes", i.classes},
          {"support", i.support},
          {"contradiction", i.contradiction},
          {"effect_size", i.effect_size}};
}

Result<json> AttemptNodeJson(GraphStore& s, memory::NodeId id, bool with_source) {
  KOPE_ASSIGN_OR_RETURN(memory::AttemptNode attempt, s.GetAttempt(id));
  auto outcomes = s.Outcomes(id);
  AttemptView view{attempt, std::nullopt};
  if (outcomes.ok() && !outcomes->empty()) view.outcome = outcomes->back();
  json j = AttemptJson(view);
  j["diff"] = attempt.diff;
  if (with_source) {
    auto source = s.GetSource(attempt.source_hash);
    j["source"] = source.ok() ? *source : source.status().message();
  }
  return j;
}

Result<json> InsightNodeJson(GraphStore& s, const NodeRef& ref) {
  KOPE_ASSIGN_OR_RETURN(memory::InsightNode insight, s.GetInsight(ref.id));
  json j = InsightJson(insight);
  auto evidence = s.Evidence(ref.id);
  if (evidence.ok()) {
    for (const memory::EvidenceEdge& e : *evidence) {
      j["evidence"].push_back({{"outcome", e.outcome_id},
                               {"relation", memory::EvidenceRelationName(e.relation)},
                               {"effect", e.effect}});
    }
  }
  auto usage = s.Usage({ref});
  if (usage.ok()) {
    j["usage"] = {{"shown", usage->front().shown},
                  {"credited", usage->front().credited},
                  {"credit", usage->front().credit}};
  }
  return j;
}

Result<json> TaskNodeJson(GraphStore& s, memory::NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::TaskNode task, s.GetTask(id));
  json j = {{"id", task.id},
            {"key", task.key},
            {"name", task.name},
            {"op_family", task.op_family},
            {"description", task.description},
            {"size", task.size},
            {"spec_hash", task.spec_hash},
            {"attrs", ParsedOrText(task.attrs_json)}};
  memory::BestQuery best;
  best.task_id = task.id;
  best.limit = 5;
  if (auto views = s.BestAttempts(best); views.ok()) {
    for (const AttemptView& v : *views) j["best"].push_back(AttemptJson(v));
  }
  if (auto similar = s.SimilarTasks(task.id, 5); similar.ok()) {
    for (const memory::SimilarTask& t : *similar) {
      j["similar"].push_back({{"task", t.task.id}, {"name", t.task.name}, {"score", t.score}});
    }
  }
  return j;
}

Result<json> HardwareNodeJson(GraphStore& s, memory::NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::HardwareNode hw, s.GetHardware(id));
  return json{{"id", hw.id},         {"key", hw.key},   {"backend", hw.backend},
              {"device", hw.device}, {"arch", hw.arch}, {"attrs", ParsedOrText(hw.attrs_json)}};
}

Result<json> RunNodeJson(GraphStore& s, memory::NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::RunNode run, s.GetRun(id));
  json j = {{"id", run.id},
            {"key", run.key},
            {"task", run.task_id},
            {"hardware", run.hardware_id},
            {"label", run.label},
            {"compiler", run.compiler},
            {"config", ParsedOrText(run.config_json)},
            {"started_at", run.started_at}};
  if (auto attempts = s.RunAttempts(run.id); attempts.ok()) j["attempts"] = attempts->size();
  return j;
}

// A workload with the tasks extracted from it (its from_workload edges).
Result<json> WorkloadNodeJson(GraphStore& s, memory::NodeId id) {
  KOPE_ASSIGN_OR_RETURN(memory::WorkloadNode workload, s.GetWorkload(id));
  json tasks = json::array();
  if (auto edges = s.WorkloadTasks(workload.id); edges.ok()) {
    for (const memory::FromWorkloadEdge& e : *edges) {
      tasks.push_back({{"task", e.task_id}, {"phases", e.phases}, {"weight", e.weight}});
    }
  }
  return json{{"id", workload.id},
              {"key", workload.key},
              {"name", workload.name},
              {"workload_hash", workload.workload_hash},
              {"attrs", ParsedOrText(workload.attrs_json)},
              {"created_at", workload.created_at},
              {"from_workload", tasks}};
}

}  // namespace

json AttemptJson(const AttemptView& v) {
  const memory::AttemptNode& a = v.attempt;
  return {{"id", a.id},
          {"key", a.key},
          {"run", a.run_id},
          {"task", a.task_id},
          {"hardware", a.hardware_id},
          {"parent", a.parent_id == 0 ? json(nullptr) : json(a.parent_id)},
          {"source_hash", a.source_hash},
          {"decision", a.decision},
          {"classes", a.classes},
          {"proposer", a.proposer},
          {"prompt_tokens", a.prompt_tokens},
          {"completion_tokens", a.completion_tokens},
          {"cost_usd", a.cost_usd},
          {"created_at", a.created_at},
          {"outcome", v.outcome ? OutcomeJsonValue(*v.outcome) : json(nullptr)}};
}

Result<json> NodeJson(GraphStore& store, const NodeRef& ref, bool with_source) {
  switch (ref.kind) {
    case NodeKind::kAttempt:
      return AttemptNodeJson(store, ref.id, with_source);
    case NodeKind::kOutcome: {
      KOPE_ASSIGN_OR_RETURN(memory::OutcomeNode outcome, store.GetOutcome(ref.id));
      return OutcomeJsonValue(outcome);
    }
    case NodeKind::kInsight:
      return InsightNodeJson(store, ref);
    case NodeKind::kTask:
      return TaskNodeJson(store, ref.id);
    case NodeKind::kHardware:
      return HardwareNodeJson(store, ref.id);
    case NodeKind::kRun:
      return RunNodeJson(store, ref.id);
    case NodeKind::kWorkload:
      return WorkloadNodeJson(store, ref.id);
  }
  return json(nullptr);
}

}  // namespace kope::cli
