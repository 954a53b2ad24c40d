#include "kope/agent/candidate_evaluator.h"

#include <thread>

#include "kope/base/hash.h"
#include "kope/record/graph_nodes.h"

namespace kope::agent {

bool LocalEvaluator::DefaultPrebuild() {
  return std::thread::hardware_concurrency() >= kPrebuildCores;
}

LocalEvaluator::~LocalEvaluator() {
  for (auto& [hash, build] : prebuilds_) build.wait();
}

void LocalEvaluator::Prepare(const Task& task, std::string_view source, std::string_view name,
                             const EvalOptions& options) {
  if (!prebuild_) return;
  std::erase_if(prebuilds_, [](auto& entry) {
    return entry.second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  const std::string hash = ContentHash(source);
  if (prebuilds_.contains(hash)) return;
  EvalOptions eval = options;
  eval.progress = nullptr;  // another thread's: the episode's lines are the evaluation's
  eval.pool = nullptr;
  prebuilds_[hash] =
      std::async(std::launch::async,
                 [this, &task, eval, source = std::string(source), name = std::string(name)] {
                   Evaluator evaluator(backend_, eval);
                   return evaluator.Prebuild(task, source, name);
                 });
  prebuilds_begun_++;
}

Result<memory::OutcomeNode> LocalEvaluator::Evaluate(const Task& task, std::string_view source,
                                                     std::string_view name,
                                                     const EvalOptions& options) {
  KOPE_ASSIGN_OR_RETURN(Outcome outcome, EvaluateOutcome(task, source, name, options));
  return record::OutcomeNodeFor(outcome);
}

Result<Outcome> LocalEvaluator::EvaluateOutcome(const Task& task, std::string_view source,
                                                std::string_view name, const EvalOptions& options) {
  // Its extension's build, where one was begun: the build folder is one evaluation's at a time.
  if (auto build = prebuilds_.find(ContentHash(source)); build != prebuilds_.end()) {
    const Status built = build->second.get();
    prebuilds_.erase(build);
    // kope's own failure to build ahead: the evaluation builds it, and the user sees why.
    if (!built.ok() && options.progress) {
      options.progress("the build ahead of this candidate failed: " + built.ToString());
    }
  }
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
  return evaluator.Evaluate(task, source, name);
}

}  // namespace kope::agent
