// RunnerPool's state (internal to the evaluator): the task runners kept from the last
// evaluation and the spare runners started ahead. See include/kope/eval/runner_pool.h.
#ifndef KOPE_SRC_EVAL_RUNNER_POOL_IMPL_H_
#define KOPE_SRC_EVAL_RUNNER_POOL_IMPL_H_

#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernel_process.h"
#include "kope/base/temp_folder.h"
#include "kope/base/worker_thread.h"
#include "kope/eval/runner_pool.h"

namespace kope {

struct RunnerPool::Impl {
  explicit Impl(RunnerPoolOptions o) : options(std::move(o)) {}
  ~Impl();

  // A runner for `role` started by `env` with `runner` (its scratch_dir is chosen here): the
  // spare of that kind if one is waiting, else a new one; `from_spare` says which. With spares,
  // the next ones of the kind start at once (by `env` too), at least `ahead` of them. The
  // process owns its folder.
  Result<std::unique_ptr<KernelProcess>> Start(const std::string& role, RunnerOptions runner,
                                               Env& env, bool* from_spare, size_t ahead = 1);
  // The task runner kept under `key` (role, artifact and RunnerKind), or null.
  std::unique_ptr<KernelProcess> TakeKept(const std::string& key);
  // Called when an evaluation begins: it counts the runners it starts from here on.
  void BeginEvaluation() { started_.clear(); }
  // Ends the kept runners the current evaluation did not take (called once it has taken its
  // own): another task's, which no later evaluation takes either (only the last evaluation's
  // are kept), and which would hold their memory while this task's runners allocate theirs (on
  // a GPU, tens of gigabytes at KernelBench's sizes).
  void EndUnclaimedKept() { kept_.clear(); }
  size_t kept() const { return kept_.size(); }
  // Keeps these task runners (those alive, and under half of `cpu_limit_seconds` of CPU time)
  // for the next evaluation, and ends every other runner still kept.
  void Keep(std::vector<std::pair<std::string, std::unique_ptr<KernelProcess>>> runners,
            double cpu_limit_seconds);

  // Spare runners waiting, of every kind (once those starting have started).
  size_t spares_waiting();
  // Returns once the spares the last Start began starting in the background have started.
  void WaitForSpawns() { spawner_.Wait(); }

  // Keeps the last candidate's arenas for the next candidate, whose runner will be started
  // with `kind`: a waiting spare of that kind that runs the Python bridge maps them now, in
  // the background (the bridge keeps them mapped and pinned for when they are mapped again).
  void KeepArenas(const std::string& kind, std::vector<std::unique_ptr<SharedArena>> arenas);
  // The arenas kept (after every background mapping of them has ended).
  std::vector<std::unique_ptr<SharedArena>> TakeArenas();

  // What makes two runners interchangeable before a kernel is loaded: everything in their
  // options but the scratch folder.
  static std::string RunnerKind(const RunnerOptions& runner);

  RunnerPoolOptions options;

 private:
  Result<std::unique_ptr<KernelProcess>> Spawn(const std::string& role, RunnerOptions runner,
                                               Env& env);

  TempFolder root_;  // made on first use, removed with the pool
  int next_folder_ = 0;
  std::map<std::string, std::unique_ptr<KernelProcess>> kept_;
  // By RunnerKind: the spares waiting, how many one evaluation wants, how many the current
  // evaluation started (since BeginEvaluation).
  std::map<std::string, std::vector<std::unique_ptr<KernelProcess>>> spares_;
  std::map<std::string, size_t> wanted_;
  std::map<std::string, size_t> started_;
  std::vector<std::unique_ptr<SharedArena>> arenas_;
  // The background mapping of arenas_ into a spare (at most one at a time); waited for before
  // a spare or an arena leaves the pool, and before the pool ends.
  std::future<void> premap_;
  void WaitForPremaps();
  // Starts the spares Start asks for, adding them to spares_; waited for before spares_ is read
  // or changed, and before the pool ends. A thread that lives as long as the pool: a runner
  // dies with the thread that started it (see kope/base/worker_thread.h).
  WorkerThread spawner_;
};

}  // namespace kope

#endif  // KOPE_SRC_EVAL_RUNNER_POOL_IMPL_H_
