// Evaluation: one Evaluator::Evaluate, as the steps kope/eval/evaluator.h lists (internal).
//
// Run() takes the steps in order: PrepareKernels, StartRunners, LoadTaskKernels,
// CompileCandidate, LoadCandidate, Verify, Sanitize, Time, VerifyAgain, Decide, and Finish. A
// step that decides the candidate's verdict (it failed) returns false, and the evaluation
// finishes there; a Status error means the task or kope is at fault, and ends it without an
// outcome. Wall time is booked by phase as the steps end. Used once, from one thread.
#ifndef KOPE_SRC_EVAL_EVALUATION_H_
#define KOPE_SRC_EVAL_EVALUATION_H_

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel_kind.h"
#include "kernel_process.h"
#include "kope/base/temp_folder.h"
#include "kope/eval/evaluator.h"
#include "runner_pool_impl.h"
#include "session.h"

namespace kope {

// What every runner's recipe starts from: the runner executable, the sandbox's limits, the
// backend's device.
Result<RunnerOptions> CommonRunnerOptions(const Backend& backend, const EvalOptions& options);

class Evaluation {
 public:
  Evaluation(Backend& backend, const EvalOptions& options, const Task& task,
             std::string_view candidate_source, std::string_view candidate_name);
  Evaluation(const Evaluation&) = delete;
  Evaluation& operator=(const Evaluation&) = delete;

  Result<Outcome> Run();

 private:
  // A task's runner: kept loaded from an earlier evaluation of the same task (with a pool),
  // else started in this one.
  struct TaskRunner {
    KernelRole role;
    std::string key;  // role, the artifact's content, the runner's settings
    std::unique_ptr<KernelProcess>* slot;
    const CompiledKernel* kernel;
    const KernelKind* kind;
    bool loaded = false;
  };

  // The steps (evaluator.cc, evaluation_runners.cc).
  Status PrepareKernels();  // kinds, hardware, scratch; the candidate's build begins
  Status StartRunners();    // every runner starts before any kernel loads
  Status LoadTaskKernels();
  Result<bool> CompileCandidate();
  Result<bool> LoadCandidate();
  Result<bool> Verify();
  Result<bool> Sanitize();
  Result<bool> Time();
  Result<bool> VerifyAgain();
  Status Decide();
  Outcome Finish();

  // Books the wall time since the last phase ended under `name`.
  void Phase(const char* name);
  Status BuildTaskKernels();
  Status UseRunnerExecutable();
  Status AddTaskRunner(KernelRole role, const CompiledKernel& kernel, const KernelKind& kind,
                       std::unique_ptr<KernelProcess>* slot);
  Result<std::unique_ptr<KernelProcess>> StartRunner(KernelRole role, const RunnerOptions& options,
                                                     size_t ahead = 1);
  Status StartCandidateRunner();
  // The runners' figures (kernel time, overheads) into the outcome.
  void AccountRunners();

  Backend& backend_;
  const EvalOptions& options_;
  const Task& task_;
  const std::string candidate_source_;
  const std::string candidate_name_;
  Env& env_;
  const double start_time_;
  double phase_start_;
  // Without a pool of the caller's, this evaluation's runners end with it. (Before the
  // session: the runners it holds end before their folders go.)
  std::optional<RunnerPool> own_pool_;
  RunnerPool::Impl& pool_;
  std::optional<KernelKinds> kinds_;
  TempFolder scratch_;  // this evaluation's own: the artifacts
  EvalSession session_;
  Outcome& out_;
  CompiledKernel reference_;
  std::optional<CompiledKernel> baseline_;
  std::optional<CompiledKernel> compiled_;
  RunnerOptions common_runner_;  // what every runner's recipe starts from
  std::vector<TaskRunner> task_runners_;
  std::unique_ptr<KernelProcess> candidate_process_;  // until its kernel compiled
  std::string candidate_runner_kind_;                 // RunnerKind of its options
  CompiledKernel candidate_;
  // The candidate's build, beside the task runners' start (last: its destructor waits for it).
  std::future<Result<CompiledKernel>> candidate_build_;
};

}  // namespace kope

#endif  // KOPE_SRC_EVAL_EVALUATION_H_
