#include "kope/eval/env.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace kope {
namespace {

Status OnlyTheBridge(const char* request) {
  return Status::FailedPrecondition(std::string(request) + " is served by the Python bridge only");
}

// A sandboxed kope-runner (or Python bridge) process: Runner, request for request.
class SandboxedRunner final : public RunnerHandle {
 public:
  explicit SandboxedRunner(std::unique_ptr<Runner> runner) : runner_(std::move(runner)) {}

  Result<CallOutcome> Load(const std::filesystem::path& artifact, double timeout) override {
    return runner_->Load(artifact, timeout);
  }
  Result<CallOutcome> MapArena(const SharedArena& arena, double timeout, bool copies) override {
    return runner_->MapArena(arena, timeout, copies);
  }
  Result<CallOutcome> Call(const CallSpec& call, double timeout) override {
    return runner_->Call(call, timeout);
  }
  Result<CallOutcome> Time(const std::vector<CallSpec>& rotation, int count, bool flush,
                           double timeout) override {
    return runner_->Time(rotation, count, flush, timeout);
  }
  Result<CallOutcome> ShareArena(uint64_t bytes, uint64_t token, int* fd, double timeout) override {
    return runner_->ShareArena(bytes, token, fd, timeout);
  }
  Result<CallOutcome> MapSharedArena(int fd, uint64_t bytes, double timeout) override {
    return runner_->MapSharedArena(fd, bytes, timeout);
  }
  Result<CallOutcome> Draw(const CallSpec& call, uint64_t seed, Runner::DrawMode mode,
                           const std::vector<Runner::DrawSpec>& distributions,
                           double timeout) override {
    return runner_->Draw(call, seed, mode, distributions, timeout);
  }
  Result<CallOutcome> ReferenceCall(const CallSpec& call, bool summarize, double timeout) override {
    return runner_->ReferenceCall(call, summarize, timeout);
  }
  Result<CallOutcome> Poison(const std::vector<Runner::PoisonSpan>& spans, const std::string& guard,
                             double timeout) override {
    return runner_->Poison(spans, guard, timeout);
  }
  Result<CallOutcome> Check(const CallSpec& call,
                            const std::vector<std::pair<double, double>>& tolerances,
                            double timeout) override {
    return runner_->Check(call, tolerances, timeout);
  }
  const Protection& protection() const override { return runner_->protection(); }
  bool alive() const override { return runner_->alive(); }
  int process_group() const override { return runner_->process_group(); }
  double cpu_seconds() const override;

 private:
  std::unique_ptr<Runner> runner_;
};

double SandboxedRunner::cpu_seconds() const {
  // /proc/PID/stat: utime and stime are fields 14 and 15, after the parenthesized name.
  std::ifstream in("/proc/" + std::to_string(runner_->pid()) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14 && fields >> skip; ++i) {
  }
  unsigned long long utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return 0;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

class RealEnv final : public Env {
 public:
  double NowSeconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  Result<std::unique_ptr<RunnerHandle>> StartRunner(const RunnerOptions& options) override {
    KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Runner> runner, Runner::Start(options));
    return std::unique_ptr<RunnerHandle>(std::make_unique<SandboxedRunner>(std::move(runner)));
  }
};

}  // namespace

Result<CallOutcome> RunnerHandle::ShareArena(uint64_t, uint64_t, int*, double) {
  return OnlyTheBridge("SHARE");
}
Result<CallOutcome> RunnerHandle::MapSharedArena(int, uint64_t, double) {
  return OnlyTheBridge("MAP_SHARED");
}
Result<CallOutcome> RunnerHandle::Draw(const CallSpec&, uint64_t, Runner::DrawMode,
                                       const std::vector<Runner::DrawSpec>&, double) {
  return OnlyTheBridge("DRAW");
}
Result<CallOutcome> RunnerHandle::ReferenceCall(const CallSpec&, bool, double) {
  return OnlyTheBridge("REF_CALL");
}
Result<CallOutcome> RunnerHandle::Poison(const std::vector<Runner::PoisonSpan>&, const std::string&,
                                         double) {
  return OnlyTheBridge("POISON");
}
Result<CallOutcome> RunnerHandle::Check(const CallSpec&,
                                        const std::vector<std::pair<double, double>>&, double) {
  return OnlyTheBridge("CHECK");
}

Env& Env::Default() {
  static Env* env = new RealEnv;
  return *env;
}

}  // namespace kope
