#include "kope/agent/candidate_evaluator.h"

#include "kope/record/graph_nodes.h"

namespace kope::agent {

Result<memory::OutcomeNode> LocalEvaluator::Evaluate(const Task& task, std::string_view source,
                                                     std::string_view name,
                                                     const EvalOptions& options) {
  EvalOptions eval = options;
  if (eval.pool == nullptr) {
    if (pool_ == nullptr) {
      RunnerPoolOptions pool_options;
      pool_options.spares = backend_.name() == "cuda" || task.torch.has_value();
      pool_options.scratch_root = eval.scratch_root;
      pool_ = std::make_shared<RunnerPool>(pool_options);
    }
    eval.pool = pool_;
  }
  Evaluator evaluator(backend_, eval);
  KOPE_ASSIGN_OR_RETURN(Outcome outcome, evaluator.Evaluate(task, source, name));
  return record::OutcomeNodeFor(outcome);
}

}  // namespace kope::agent
