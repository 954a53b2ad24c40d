// The runners of one evaluation: the task's (kept from the last evaluation of the same task,
// or started), the candidate's (never used by another kernel), and the task kernels' loads.
#include "evaluation.h"
#include "kope/base/file.h"
#include "kope/base/hash.h"

namespace kope {

Result<RunnerOptions> CommonRunnerOptions(const Backend& backend, const EvalOptions& options) {
  RunnerOptions common;
  if (options.runner_exe.empty()) {
    KOPE_ASSIGN_OR_RETURN(common.runner_exe, FindRunnerExecutable());
  } else {
    common.runner_exe = options.runner_exe;
  }
  common.sandbox.limits = options.limits;
  common.sandbox.use_bubblewrap = options.use_bubblewrap;
  common.device = backend.runner_device();
  return common;
}

Status Evaluation::UseRunnerExecutable() {
  KOPE_ASSIGN_OR_RETURN(common_runner_, CommonRunnerOptions(backend_, options_));
  return Status::Ok();
}

Result<std::unique_ptr<KernelProcess>> Evaluation::StartRunner(KernelRole role,
                                                               const RunnerOptions& options,
                                                               size_t ahead) {
  bool from_spare = false;
  auto process = pool_.Start(RoleName(role), options, env_, &from_spare, ahead);
  if (process.ok() && from_spare) out_.runners_from_spares++;
  return process;
}

Status Evaluation::AddTaskRunner(KernelRole role, const CompiledKernel& kernel,
                                 const KernelKind& kind, std::unique_ptr<KernelProcess>* slot) {
  const RunnerOptions options = kind.Recipe(common_runner_, /*task_runner=*/true);
  KOPE_ASSIGN_OR_RETURN(std::string artifact, ReadFileText(kernel.artifact));
  // A runner started with other settings (limits, sandbox) is not the same runner.
  TaskRunner r{role,
               RoleName(role) + ":" + ContentHash(artifact) + ":" +
                   ContentHash(RunnerPool::Impl::RunnerKind(options)),
               slot, &kernel, &kind};
  *slot = pool_.TakeKept(r.key);
  if (*slot != nullptr) {
    r.loaded = true;
    out_.runners_reused++;
  } else {
    KOPE_ASSIGN_OR_RETURN(*slot, StartRunner(role, options));
    (*slot)->keep_arena();
  }
  task_runners_.push_back(std::move(r));
  return Status::Ok();
}

// Every runner starts before any kernel loads: GPU runners set their devices up in parallel,
// with each other and with the candidate's compile.
Status Evaluation::StartRunners() {
  KOPE_RETURN_IF_ERROR(UseRunnerExecutable());
  session_.Progress("start runners");
  const KernelKinds& k = *kinds_;
  KOPE_RETURN_IF_ERROR(
      AddTaskRunner(KernelRole::kReference, reference_, k.reference(), &session_.reference));
  if (baseline_) {
    KOPE_RETURN_IF_ERROR(
        AddTaskRunner(KernelRole::kBaseline, *baseline_, k.baseline(), &session_.baseline));
  }
  if (compiled_) {
    KOPE_RETURN_IF_ERROR(
        AddTaskRunner(KernelRole::kCompiled, *compiled_, *k.compiled(), &session_.compiled));
  }
  pool_.EndUnclaimedKept();  // another task's: ended before this task's kernels load and map
  return StartCandidateRunner();
}

Status Evaluation::StartCandidateRunner() {
  const KernelKind& kind = kinds_->candidate();
  // A recipe of the candidate's own is started for it alone: no spares ahead of that kind.
  const std::optional<RunnerOptions> own = kind.CandidateRecipe(common_runner_, candidate_source_);
  const RunnerOptions options = own ? *own : kind.Recipe(common_runner_, /*task_runner=*/false);
  pool_.WaitForSpawns();  // the task runners' spares: not the candidate's wait
  const double start = env_.NowSeconds();
  KOPE_ASSIGN_OR_RETURN(candidate_process_, StartRunner(KernelRole::kCandidate, options,
                                                        own ? 0 : kind.spares_ahead()));
  candidate_runner_kind_ = RunnerPool::Impl::RunnerKind(options);
  // The last candidate's arenas (its process has ended), for this one's sizes that match them.
  candidate_process_->AdoptArenas(pool_.TakeArenas());
  candidate_process_->retain_arenas();
  // Its start (a spare's mapping of those arenas included) is waited for like its load.
  candidate_process_->AccountWait("load", env_.NowSeconds() - start);
  return Status::Ok();
}

// The task's kernels load at once, each in its own runner (building a PyTorch model takes
// seconds); the results are taken in order.
Status Evaluation::LoadTaskKernels() {
  const double timeout = options_.call_timeout_seconds;
  std::vector<std::future<Status>> loads;
  for (TaskRunner& r : task_runners_) {
    if (r.loaded) continue;
    KernelProcess* p = r.slot->get();
    loads.push_back(std::async(std::launch::async, [p, &r, timeout] {
      return p->Load(r.kernel->artifact, r.kind->LoadTimeout(timeout));
    }));
  }
  size_t next_load = 0;
  for (TaskRunner& r : task_runners_) {
    if (r.loaded) continue;
    KernelProcess& p = **r.slot;
    Status loaded = loads[next_load++].get();
    if (r.role == KernelRole::kCompiled) {  // a reference point that fails is dropped, noted
      if (!loaded.ok() || !p.load_outcome().ok()) {
        out_.compiled_note = "torch.compile was not timed: " +
                             (loaded.ok() ? p.load_outcome().detail : loaded.message());
        r.slot->reset();
      }
      continue;
    }
    KOPE_RETURN_IF_ERROR(loaded);
    if (!p.load_outcome().ok()) {
      return Status::FailedPrecondition("the task's " + RoleName(r.role) +
                                        " does not load: " + p.load_outcome().detail);
    }
  }
  return Status::Ok();
}

}  // namespace kope
