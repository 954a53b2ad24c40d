#include "kope/agent/candidate_evaluator.h"

#include <sched.h>
#include <signal.h>

#include <system_error>
#include <thread>

#include "kope/base/hash.h"
#include "kope/record/graph_nodes.h"

namespace kope::agent {

bool LocalEvaluator::DefaultPrebuild() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int usable = sched_getaffinity(0, sizeof(cpus), &cpus) == 0
                         ? CPU_COUNT(&cpus)
                         : static_cast<int>(std::thread::hardware_concurrency());
  return usable >= static_cast<int>(kPrebuildCores);
}

// A build in flight is for a candidate that will not be evaluated now: its runner is ended.
LocalEvaluator::~LocalEvaluator() {
  for (auto& [hash, build] : prebuilds_) {
    if (const int group = build.runner_group->exchange(-1); group > 0) kill(-group, SIGKILL);
    build.done.wait();
  }
}

void LocalEvaluator::Prepare(const Task& task, std::string_view source, std::string_view name,
                             const EvalOptions& options) {
  // Careful timing gets no compiler beside it.
  if (!prebuild_ || options.timing_label == "confirm") return;
  const std::string hash = ContentHash(source);
  if (prebuilds_.contains(hash)) return;
  EvalOptions eval = options;
  eval.progress = nullptr;  // another thread's: the caller's lines are the evaluation's
  eval.pool = nullptr;
  auto group = std::make_shared<std::atomic<int>>(0);
  try {
    prebuilds_[hash] = {std::async(std::launch::async,
                                   [this, &task, eval, group, source = std::string(source),
                                    name = std::string(name)]() -> Status {
                                     Evaluator evaluator(backend_, eval);
                                     return evaluator.Prebuild(task, source, name, group.get());
                                   }),
                        group};
  } catch (const std::system_error&) {  // no thread to build on: its evaluation builds it
    prebuilds_.erase(hash);
    return;
  }
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
    const Status built = build->second.done.get();
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
