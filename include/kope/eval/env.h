// Env: the evaluator's contact with the machine, its clock and the runner processes it
// starts. Everything the evaluator decides (verdicts, flags, the stopping rule of timing, the
// limit of a candidate call) is computed from what these two tell it, so that a test can swap
// in a fake clock and fake runners and check those rules deterministically, in milliseconds,
// without a sandbox or a compiler.
//
// Env::Default() is the real one: the steady clock, and sandboxed kope-runner or Python bridge
// processes (Runner::Start). It is thread-safe and lives as long as the program. An Env given
// to the evaluator (EvalOptions::env) must outlive every evaluation and runner pool that uses
// it, and be safe to call from the pool's background thread (spares start there).
#ifndef KOPE_EVAL_ENV_H_
#define KOPE_EVAL_ENV_H_

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kope/base/status.h"
#include "kope/runner/runner.h"

namespace kope {

// The parent's side of one started runner: the requests of kope/runner/runner.h, with the
// same contract (a kernel's failure is a CallOutcome, a Status error is kope's own). Not
// thread-safe: one owner drives it. Destroying it ends the process.
class RunnerHandle {
 public:
  virtual ~RunnerHandle() = default;

  virtual Result<CallOutcome> Load(const std::filesystem::path& artifact,
                                   double timeout_seconds) = 0;
  virtual Result<CallOutcome> MapArena(const SharedArena& arena, double timeout_seconds,
                                       bool copies) = 0;
  virtual Result<CallOutcome> Call(const CallSpec& call, double timeout_seconds) = 0;
  virtual Result<CallOutcome> Time(const std::vector<CallSpec>& rotation, int count, bool flush,
                                   double timeout_seconds) = 0;

  // The checking requests, which only the Python bridge serves; by default
  // FailedPrecondition.
  virtual Result<CallOutcome> ShareArena(uint64_t bytes, uint64_t token, int* fd,
                                         double timeout_seconds);
  virtual Result<CallOutcome> MapSharedArena(int fd, uint64_t bytes, double timeout_seconds);
  virtual Result<CallOutcome> Draw(const CallSpec& call, uint64_t seed, Runner::DrawMode mode,
                                   const std::vector<Runner::DrawSpec>& distributions,
                                   double timeout_seconds);
  virtual Result<CallOutcome> ReferenceCall(const CallSpec& call, bool summarize,
                                            double timeout_seconds);
  virtual Result<CallOutcome> Poison(const std::vector<Runner::PoisonSpan>& spans,
                                     const std::string& guard, double timeout_seconds);
  virtual Result<CallOutcome> Check(const CallSpec& call,
                                    const std::vector<std::pair<double, double>>& tolerances,
                                    double timeout_seconds);

  virtual const Protection& protection() const = 0;
  virtual bool alive() const = 0;
  // The runner's process group (Runner::process_group); 0 where there is none.
  virtual int process_group() const { return 0; }
  // CPU time the process has used so far (0 where that cannot be told).
  virtual double cpu_seconds() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The real clock and sandboxed runners; never destroyed.
  static Env& Default();

  // Seconds on a monotonic clock (the origin is arbitrary).
  virtual double NowSeconds() = 0;
  // Starts a runner with `options` (sandbox, limits, interpreter and scratch folder); a Status
  // error when it cannot start.
  virtual Result<std::unique_ptr<RunnerHandle>> StartRunner(const RunnerOptions& options) = 0;
};

}  // namespace kope

#endif  // KOPE_EVAL_ENV_H_
