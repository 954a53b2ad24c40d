// Where an episode's candidates are evaluated. LocalEvaluator runs them on this machine's
// backend, keeping the task's runners loaded from one candidate to the next; another
// implementation may run them elsewhere (`kope optimize --workers`: by `kope worker` processes,
// through the shared store's queue). Either way the episode gets the outcome as the graph
// records it, and records it itself.
#ifndef KOPE_AGENT_CANDIDATE_EVALUATOR_H_
#define KOPE_AGENT_CANDIDATE_EVALUATOR_H_

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/eval/evaluator.h"
#include "kope/eval/runner_pool.h"
#include "kope/memory/model.h"
#include "kope/task/task.h"

namespace kope::agent {

class CandidateEvaluator {
 public:
  virtual ~CandidateEvaluator() = default;

  // The outcome of `source` (written to the file `name`) on `task` under `options` (the episode
  // sets their timing policy and progress), as the graph records it (record::OutcomeNodeFor);
  // its ids are the caller's to set. A Status error: the evaluation itself could not be made.
  virtual Result<memory::OutcomeNode> Evaluate(const Task& task, std::string_view source,
                                               std::string_view name,
                                               const EvalOptions& options) = 0;

  // Says that `source` is evaluated next: an implementation may begin what its evaluation
  // will need (its extension's build) while the current one runs; `task` must outlive this
  // evaluator. Nothing by default.
  virtual void Prepare(const Task& /*task*/, std::string_view /*source*/, std::string_view /*name*/,
                       const EvalOptions& /*options*/) {}
};

// On `backend` (not owned), in this process. Unless the options bring a RunnerPool, the first
// evaluation starts one that the next ones reuse: the task's runners stay loaded, and where a
// runner's start is expensive (a CUDA context, PyTorch's import) the next one starts ahead.
//
// With `prebuild`, Prepare builds the next candidate's extension (Evaluator::Prebuild) in a
// runner of its own while the current candidate is timed, and its evaluation waits for that
// build first. Not beside careful timing (a confirming policy), and by default only where this
// process may use at least kPrebuildCores cores: a compiler beside the timed runners on fewer
// takes their cores, and their timing gets noisy. A build still in flight when the evaluator
// ends is ended with it. The build's runner loads the candidate as its evaluation would: on a
// GPU that makes a CUDA context and the ModelNew's parameters beside the timed runners.
class LocalEvaluator final : public CandidateEvaluator {
 public:
  static constexpr unsigned kPrebuildCores = 4;
  static bool DefaultPrebuild();

  explicit LocalEvaluator(Backend& backend, bool prebuild = DefaultPrebuild())
      : backend_(backend), prebuild_(prebuild) {}
  ~LocalEvaluator() override;

  Result<memory::OutcomeNode> Evaluate(const Task& task, std::string_view source,
                                       std::string_view name, const EvalOptions& options) override;
  void Prepare(const Task& task, std::string_view source, std::string_view name,
               const EvalOptions& options) override;
  // Evaluate's outcome as the evaluator gives it (`kope eval` of several candidates prints it).
  Result<Outcome> EvaluateOutcome(const Task& task, std::string_view source, std::string_view name,
                                  const EvalOptions& options);

  // How many prebuilds were begun.
  int prebuilds_begun() const { return prebuilds_begun_; }

 private:
  Backend& backend_;
  const bool prebuild_;
  std::shared_ptr<RunnerPool> pool_;
  // The builds in flight, by their source's content hash.
  struct Prebuild {
    std::future<Status> done;
    std::shared_ptr<std::atomic<int>> runner_group;  // its runner's, while it loads
  };
  std::map<std::string, Prebuild> prebuilds_;
  int prebuilds_begun_ = 0;
};

}  // namespace kope::agent

#endif  // KOPE_AGENT_CANDIDATE_EVALUATOR_H_
