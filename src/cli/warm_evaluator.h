// WarmEvaluator: what the warm evaluation service (eval_service.h) does with one request:
// exactly what `kope eval` does in its own process (load the task or problem, choose the
// backend, evaluate, print the outcome), through a RunnerPool that lives as long as the
// service. The pool keeps the task's own runners (reference, baseline, torch.compile) loaded
// between requests for the same task and starts the next candidate's runner ahead; every
// candidate still gets a fresh sandboxed runner of its own (kope/eval/runner_pool.h).
//
// The backend and the pool are made on the first request and kept while requests ask for the
// same backend; they are dropped when the backend changes, or when the Python bridge's files
// changed since the pool's runners loaded them.
//
// Not thread-safe, and bound to its thread: the runners the pool keeps die with the thread
// that started them (kope/base/subprocess.h), so every Evaluate call must come from the
// thread that lives as long as the service.
#ifndef KOPE_SRC_CLI_WARM_EVALUATOR_H_
#define KOPE_SRC_CLI_WARM_EVALUATOR_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "eval_wire.h"
#include "kope/backend/backend.h"
#include "kope/eval/runner_pool.h"
#include "kope/task/task.h"

namespace kope::cli {

// What `kope eval` would have printed and returned.
struct WarmResult {
  int exit_code = 2;
  std::string out;      // stdout: the outcome, as text or JSON
  std::string err;      // stderr: "kope eval: ..." on failure
  std::string verdict;  // for the service's log; empty without an outcome
};

class WarmEvaluator {
 public:
  WarmEvaluator() = default;
  WarmResult Evaluate(const WarmRequest& request,
                      const std::function<void(std::string_view)>& progress);

 private:
  Status PrepareBackend(const WarmRequest& request, const Task& task);

  std::string backend_name_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<RunnerPool> pool_;
  std::string bridge_stamp_;
};

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_WARM_EVALUATOR_H_
