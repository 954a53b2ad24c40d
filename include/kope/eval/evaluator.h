// Evaluator: the trusted side that decides a candidate's verdict.
//
// For one task and one candidate source, Evaluate takes these steps (src/eval/evaluation.h):
//  1. PrepareKernels: chooses each kernel's kind (a native kernel on the CPU or a GPU, or a
//     PyTorch module run by the Python bridge), and starts building the candidate (compiled by
//     the backend, or described to the bridge) while the task's baseline and reference are
//     built (cached);
//  2. StartRunners: starts one sandboxed runner per kernel (the candidate never shares a
//     process with kope, the reference or the baseline), or takes the task's from the pool;
//  3. LoadTaskKernels, CompileCandidate, LoadCandidate;
//  4. Verify: `trials` trials per size set (every check set, then bench), each on fresh inputs
//     from a secret seed, cycling the declared input distributions; outputs poisoned before
//     every call, guard bytes after every output, inputs hashed before and after, every call
//     made twice (two poison patterns) and both results compared with the reference;
//  5. Sanitize (with `sanitize`): the backend's memory and race checkers as a gate;
//  6. Time: the candidate and the baseline interleaved in one session on rotating input sets,
//     caches flushed before each call, until the policy's stopping rule holds; cross-checks
//     the runner's figures against the parent's wall clock;
//  7. VerifyAgain on fresh inputs, then Decide the verdict and flags (and Profile, with
//     `profile`), and Finish: the task's runners are kept in the pool.
// A task whose reference ignores its inputs is rejected with a Status.
// Candidate failures are Outcomes; a Status error means the task is broken or
// kope could not do its own part. One Evaluator may be used from one thread
// at a time; separate Evaluators may run in parallel.
#ifndef KOPE_EVAL_EVALUATOR_H_
#define KOPE_EVAL_EVALUATOR_H_

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/eval/env.h"
#include "kope/eval/outcome.h"
#include "kope/eval/runner_pool.h"
#include "kope/eval/timing.h"
#include "kope/runner/sandbox.h"
#include "kope/task/task.h"

namespace kope {

struct EvalOptions {
  int trials = 5;
  TimingPolicy timing = TimingPolicy::Screen();
  std::string timing_label = "screen";
  double call_timeout_seconds = 10;  // one kernel call, wall clock
  SandboxLimits limits;
  bool use_bubblewrap = true;
  std::filesystem::path runner_exe;    // empty: FindRunnerExecutable()
  std::filesystem::path scratch_root;  // empty: the system temp folder
  // After verification, the backend's memory and race checkers (Backend::Sanitize) on the
  // check sizes, as a gate: an error they report makes the candidate incorrect.
  bool sanitize = false;
  // After a valid verdict, the backend's profiler (Backend::Profile) on one call at the bench
  // size; its compact metrics are stored with the outcome.
  bool profile = false;
  // For a task with a PyTorch baseline: also time torch.compile of it, beside the baseline (its
  // first call compiles: seconds to minutes, cached between evaluations).
  bool torch_compile_reference = true;
  // Runners kept between evaluations (the task's own, spares); null: each evaluation starts
  // and ends its own. See kope/eval/runner_pool.h.
  std::shared_ptr<RunnerPool> pool;
  // The clock and the runner processes (kope/eval/env.h); null: Env::Default(). A pool given
  // with it must only be used with the same Env.
  Env* env = nullptr;
  // Called with short progress lines ("verify check[1] trial 3/5"); may be empty.
  std::function<void(std::string_view)> progress;
};

class Evaluator {
 public:
  Evaluator(Backend& backend, EvalOptions options);

  Result<Outcome> Evaluate(const Task& task, std::string_view candidate_source,
                           std::string_view candidate_name);

  // Builds, in a runner of its own, what loading `candidate_source` builds and keeps between
  // evaluations (a ModelNew's C++/CUDA extension, in its source's build folder), so that its
  // evaluation finds it built: an episode builds its next candidate's extension while the
  // current one is timed. Ok where its load keeps nothing or it does not compile (its
  // evaluation reports that). Callable from another thread while this evaluator evaluates
  // another candidate; the same source must not be evaluated until it returns. With
  // `runner_group` (0 at the start), the runner's process group is stored there while it loads
  // (0 again after): killing that group ends the build, and Prebuild returns. A caller that
  // sets it to -1 first ends it before its load begins.
  Status Prebuild(const Task& task, std::string_view candidate_source,
                  std::string_view candidate_name, std::atomic<int>* runner_group = nullptr);

 private:
  Backend& backend_;
  EvalOptions options_;
};

}  // namespace kope

#endif  // KOPE_EVAL_EVALUATOR_H_
