// BuildContext: resolve, retrieve, rank, pack, render; and RecordInjection.
#include "kope/context/context_builder.h"

#include "assembly.h"
#include "retrieval.h"

namespace kope::context {
namespace {

bool RecordsUse(Section s) {
  return s == Section::kInsights || s == Section::kExemplars || s == Section::kFailureRules;
}

}  // namespace

std::string_view ContextModeName(ContextMode mode) {
  return mode == ContextMode::kActive ? "active" : "passive";
}

std::string_view SectionName(Section section) {
  switch (section) {
    case Section::kTask:
      return "task";
    case Section::kProfile:
      return "profile";
    case Section::kLineage:
      return "lineage";
    case Section::kAlternatives:
      return "alternatives";
    case Section::kInsights:
      return "insights";
    case Section::kExemplars:
      return "exemplars";
    case Section::kFailureRules:
      return "failure_rules";
    case Section::kHistory:
      return "history";
  }
  return "?";
}

std::string_view FidelityName(Fidelity fidelity) {
  switch (fidelity) {
    case Fidelity::kFull:
      return "full";
    case Fidelity::kSummary:
      return "summary";
    case Fidelity::kLine:
      return "line";
  }
  return "?";
}

Result<BuiltContext> BuildContext(memory::GraphStore& store, const ContextRequest& request) {
  KOPE_ASSIGN_OR_RETURN(internal::State state, internal::ResolveState(store, request));
  if (request.mode == ContextMode::kPassive) return internal::BuildPassive(store, state);
  return internal::BuildActive(store, state);
}

Status RecordInjection(memory::GraphWriter& writer, memory::NodeId attempt,
                       const BuiltContext& context) {
  for (const ContextItem& item : context.items) {
    if (!RecordsUse(item.section) || item.node.id == 0) continue;
    if (item.node.kind != memory::NodeKind::kInsight &&
        item.node.kind != memory::NodeKind::kAttempt) {
      continue;
    }
    memory::UsedEdge edge;
    edge.attempt_id = attempt;
    edge.target = item.node;
    edge.section = std::string(SectionName(item.section));
    edge.score = item.score;
    edge.tokens = item.tokens;
    KOPE_RETURN_IF_ERROR(writer.AddUsed(edge).status());
  }
  return Status::Ok();
}

}  // namespace kope::context
