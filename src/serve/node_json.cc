#include "node_json.h"

#include "kope/memory/outcome_json.h"

namespace kope::serve::internal {
namespace {

json Optional(const std::optional<double>& value) {
  return value.has_value() ? json(*value) : json(nullptr);
}

}  // namespace

json ParseObject(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

json TaskJson(const memory::TaskNode& t) {
  return {{"id", t.id},
          {"key", t.key},
          {"name", t.name},
          {"op_family", t.op_family},
          {"size", t.size},
          {"description", t.description},
          {"attrs", ParseObject(t.attrs_json)},
          {"created_at", t.created_at}};
}

json HardwareJson(const memory::HardwareNode& h) {
  return {{"id", h.id},         {"key", h.key},   {"backend", h.backend},
          {"device", h.device}, {"arch", h.arch}, {"attrs", ParseObject(h.attrs_json)}};
}

std::string RunProposer(const memory::RunNode& run) {
  json config = ParseObject(run.config_json);
  auto model = config.find("model");
  if (model == config.end() || !model->is_string()) return "offline";
  std::string provider = config.value("provider", "");
  return "llm:" + (provider.empty() ? "" : provider + "/") + model->get<std::string>();
}

json RunJson(const memory::RunNode& r) {
  return {{"id", r.id},
          {"key", r.key},
          {"task", r.task_id},
          {"hardware", r.hardware_id},
          {"label", r.label},
          {"compiler", r.compiler},
          {"proposer", RunProposer(r)},
          {"config", ParseObject(r.config_json)},
          {"started_at", r.started_at}};
}

json OutcomeBrief(const std::optional<memory::OutcomeNode>& o) {
  if (!o.has_value()) return nullptr;
  return {{"id", o->id},
          {"stage", o->stage},
          {"verdict", o->verdict},
          {"flagged", o->flagged},
          {"speedup", Optional(o->speedup)},
          {"roofline", Optional(o->roofline)},
          {"time_ms", Optional(o->time_ms)}};
}

json OutcomeFull(const memory::OutcomeNode& outcome) {
  json j = json::parse(memory::OutcomeJson(outcome), nullptr, false);
  return j.is_object() ? j : json::object();
}

json AttemptBrief(const memory::AttemptView& view) {
  const memory::AttemptNode& a = view.attempt;
  return {{"id", a.id},
          {"run", a.run_id},
          {"task", a.task_id},
          {"hardware", a.hardware_id},
          {"parent", a.parent_id == 0 ? json(nullptr) : json(a.parent_id)},
          {"decision", a.decision},
          {"classes", a.classes},
          {"proposer", a.proposer},
          {"prompt_tokens", a.prompt_tokens},
          {"completion_tokens", a.completion_tokens},
          {"cost_usd", a.cost_usd},
          {"created_at", a.created_at},
          {"outcome", OutcomeBrief(view.outcome)}};
}

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
          {"effect_size", i.effect_size},
          {"created_at", i.created_at},
          {"updated_at", i.updated_at}};
}

json WorkloadJson(const memory::WorkloadNode& w) {
  return {{"id", w.id},
          {"key", w.key},
          {"name", w.name},
          {"workload_hash", w.workload_hash},
          {"attrs", ParseObject(w.attrs_json)},
          {"created_at", w.created_at}};
}

}  // namespace kope::serve::internal
