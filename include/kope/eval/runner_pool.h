// RunnerPool: runners kept between evaluations, for a caller that evaluates many candidates
// (an optimization episode, a benchmark suite). Given to the Evaluator through
// EvalOptions::pool; without one, every evaluation starts and ends its own runners.
//
// A pool
//  - keeps the task's own kernels (reference, baseline, torch.compile reference point) loaded
//    after an evaluation, for the next candidate of the same task. They are task code, trusted;
//    only the last evaluation's are kept (another task's evaluation ends them before its own
//    kernels load, so that their memory is free for its runners), and never a runner that
//    failed, died, or used half of its CPU-time limit;
//  - with `spares`, starts a runner of each kind the last evaluation used ahead of time, with no
//    kernel loaded, so that the next runner's start (PyTorch's import, a CUDA context) overlaps
//    the current evaluation instead of adding to the next. Spares start on a thread of the
//    pool's own, in the background. The evaluator asks for two PyTorch candidate runners ahead
//    (their start takes longer than a quick evaluation). With `spares_for_next_task` as well,
//    it keeps as many of each kind as one evaluation has started so far (a new task's reference,
//    baseline and torch.compile runners besides the candidate's), for a caller that moves from
//    task to task (a benchmark suite);
//  - keeps the arenas (shared memory) of the last candidate's largest size sets, and hands them
//    to the next candidate's process when its sizes match: a fresh arena of hundreds of
//    megabytes costs its runner a few tenths of a second to fault in and pin. The evaluator
//    writes every input, output and guard byte of an arena before each call, so nothing a
//    candidate left in one reaches the next (and the candidate's process has ended first).
// A candidate always gets a runner no kernel has used, in a scratch folder of its own, and its
// runner ends with its evaluation: nothing a candidate does reaches another candidate.
//
// Not thread-safe: one evaluation at a time per pool. Destroying the pool ends its runners and
// removes their folders.
#ifndef KOPE_EVAL_RUNNER_POOL_H_
#define KOPE_EVAL_RUNNER_POOL_H_

#include <filesystem>
#include <memory>

namespace kope {

struct RunnerPoolOptions {
  bool spares = false;                 // start the next runners ahead of time
  bool spares_for_next_task = false;   // with spares: enough for a new task's runners too
  std::filesystem::path scratch_root;  // empty: the system temp folder
};

class RunnerPool {
 public:
  explicit RunnerPool(RunnerPoolOptions options = {});
  ~RunnerPool();
  RunnerPool(const RunnerPool&) = delete;
  RunnerPool& operator=(const RunnerPool&) = delete;

  struct Impl;  // src/eval/runner_pool_impl.h
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kope

#endif  // KOPE_EVAL_RUNNER_POOL_H_
