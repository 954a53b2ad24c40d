#include "context_meter.h"

#include "kope/context/context_builder.h"

namespace kope::bench_suite::internal {

Result<agent::ProposeResult> ContextMeter::Propose(const agent::ProposalRequest& request) {
  KOPE_ASSIGN_OR_RETURN(agent::ProposeResult result, inner_->Propose(request));
  if (result.kind != agent::ProposeResult::Kind::kCandidate) return result;
  PromptTokens counted;
  for (context::ContextMode mode :
       {context::ContextMode::kActive, context::ContextMode::kPassive}) {
    context::ContextRequest cr;
    cr.task = request.task;
    cr.task_id = request.task_id;
    cr.node = request.parent ? request.parent->attempt.id : 0;
    cr.run = request.run_id;
    cr.hardware = request.hardware;
    cr.mode = mode;
    cr.budget_tokens =
        mode == context::ContextMode::kActive ? budget_tokens_ : context::kUnboundedTokens;
    cr.language = request.candidate_language;
    Result<context::BuiltContext> built = context::BuildContext(*request.store, cr);
    if (!built.ok()) {
      if (error_.empty()) error_ = built.status().message();
      continue;
    }
    (mode == context::ContextMode::kActive ? counted.active : counted.passive) =
        built->total_tokens;
  }
  auto inner_recorded = std::move(result.candidate.on_recorded);
  result.candidate.on_recorded = [this, counted, inner_recorded](memory::GraphWriter& writer,
                                                                 memory::NodeId attempt) {
    tokens_[attempt] = counted;
    return inner_recorded ? inner_recorded(writer, attempt) : Status::Ok();
  };
  return result;
}

}  // namespace kope::bench_suite::internal
