#include "warm_evaluator.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "eval_backend.h"
#include "kope/eval/evaluator.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;

// The bridge package's files as they are now (names, sizes, modification times): runners
// loaded from other files are not kept.
std::string BridgeStamp() {
  Result<TorchBridge> bridge = FindTorchBridge();
  if (!bridge.ok()) return "";
  std::vector<std::string> entries;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(bridge->package_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".py") continue;
    struct stat st {};
    if (stat(it->path().c_str(), &st) != 0) continue;
    entries.push_back(it->path().string() + ":" + std::to_string(st.st_size) + ":" +
                      std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec));
  }
  std::sort(entries.begin(), entries.end());
  std::string stamp;
  for (const auto& e : entries) stamp += e + ";";
  return stamp;
}

EvalOptions OptionsFor(const WarmRequest& r) {
  EvalOptions options;
  options.trials = r.trials;
  options.call_timeout_seconds = r.timeout;
  options.use_bubblewrap = !r.no_bubblewrap;
  options.profile = r.profile;
  options.sanitize = r.sanitize;
  if (r.confirm) {
    options.timing = TimingPolicy::Confirm();
    options.timing_label = "confirm";
  }
  return options;
}

WarmResult Failure(int code, const std::string& message) {
  WarmResult result;
  result.exit_code = code;
  result.err = "kope eval: " + message + "\n";
  return result;
}

}  // namespace

Status WarmEvaluator::PrepareBackend(const WarmRequest& request, const Task& task) {
  KOPE_ASSIGN_OR_RETURN(std::string name,
                        EvalBackendName(request.backend, request.candidate, task));
  std::string stamp = task.torch.has_value() ? BridgeStamp() : bridge_stamp_;
  if (backend_ != nullptr && name == backend_name_ && stamp == bridge_stamp_) {
    return Status::Ok();
  }
  pool_.reset();  // its runners end before another backend's start
  backend_.reset();
  KOPE_ASSIGN_OR_RETURN(backend_, MakeEvalBackend(name));
  backend_name_ = name;
  bridge_stamp_ = std::move(stamp);
  RunnerPoolOptions pool_options;
  pool_options.spares = true;
  pool_ = std::make_shared<RunnerPool>(pool_options);
  return Status::Ok();
}

WarmResult WarmEvaluator::Evaluate(const WarmRequest& request,
                                   const std::function<void(std::string_view)>& progress) {
  Result<Task> task = LoadTaskOrProblem(request.task);
  if (!task.ok()) return Failure(2, task.status().message());
  if (Status s = PrepareBackend(request, *task); !s.ok()) return Failure(1, s.message());
  EvalOptions options = OptionsFor(request);
  options.pool = pool_;
  if (!request.quiet) options.progress = progress;
  Evaluator evaluator(*backend_, options);
  const std::string name = fs::path(request.candidate).filename().string();
  Result<Outcome> outcome = evaluator.Evaluate(*task, request.source, name);
  if (!outcome.ok()) return Failure(2, outcome.status().message());
  WarmResult result;
  result.out = request.json ? OutcomeToJson(*outcome) + "\n" : FormatOutcome(*outcome);
  result.exit_code = outcome->valid() ? 0 : 1;
  result.verdict = std::string(VerdictName(outcome->verdict));
  return result;
}

}  // namespace kope::cli
