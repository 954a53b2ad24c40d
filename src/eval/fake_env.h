// FakeEnv (tests only): a clock that moves only when a fake runner says so, and runners that
// run kernels written in C++ in this process, on the arena the evaluator maps, taking the
// (fake) time each kernel declares. With FakeBackend (compiles a source text to the name of a
// registered kernel), an evaluation runs its whole protocol in milliseconds, deterministically
// but for the secret seeds, with no sandbox, compiler or child process.
#ifndef KOPE_SRC_EVAL_FAKE_ENV_H_
#define KOPE_SRC_EVAL_FAKE_ENV_H_

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kope/backend/backend.h"
#include "kope/eval/env.h"

namespace kope {

// One kernel of a one-input, one-output f32 task (x -> y, n elements).
struct FakeKernel {
  // Writes y from x; `call` counts this runner's verified calls before this one. `y` is
  // followed by the output's guard bytes, `x` is writable (a kernel may misbehave).
  std::function<void(float* x, float* y, size_t n, int call)> compute;
  double call_seconds = 1e-3;   // kernel time of one verified call
  double timed_seconds = 1e-3;  // kernel time of one timed call
  double jitter = 0;            // timed calls alternate between (1 -/+ jitter) * timed_seconds
  double reported_scale = 1;    // the runner reports its kernel time times this
  int return_code = 0;          // of every call
  bool crashes = false;         // every call kills the runner
};

class FakeEnv final : public Env {
 public:
  static constexpr double kRequestSeconds = 1e-6;  // a request's round trip

  // Registers `kernel` under `name`: an artifact holding `name` loads it.
  void Add(const std::string& name, FakeKernel kernel) { kernels_[name] = std::move(kernel); }

  double NowSeconds() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Advance(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += seconds;
  }
  Result<std::unique_ptr<RunnerHandle>> StartRunner(const RunnerOptions&) override;
  const FakeKernel* Find(const std::string& name) const {
    auto it = kernels_.find(name);
    return it == kernels_.end() ? nullptr : &it->second;
  }

 private:
  std::mutex mu_;
  double now_ = 1000;
  std::map<std::string, FakeKernel> kernels_;
};

class FakeRunner final : public RunnerHandle {
 public:
  explicit FakeRunner(FakeEnv& env) : env_(env) {}

  Result<CallOutcome> Load(const std::filesystem::path& artifact, double) override {
    std::ifstream in(artifact);
    std::stringstream name;
    name << in.rdbuf();
    kernel_ = env_.Find(name.str());
    CallOutcome out = Answered();
    if (kernel_ == nullptr) {
      out.kind = CallOutcome::Kind::kKernelError;
      out.detail = "no kernel " + name.str();
    }
    return out;
  }
  Result<CallOutcome> MapArena(const SharedArena& arena, double, bool) override {
    arena_ = &arena;
    return Answered();
  }
  Result<CallOutcome> Call(const CallSpec& call, double timeout) override {
    if (!alive_) return Dead();
    CallOutcome out = Run(call, kernel_->call_seconds, 1, timeout);
    if (out.ok()) {
      const TensorSlot& x = call.inputs[0];
      kernel_->compute(reinterpret_cast<float*>(arena_->data() + x.offset),
                       reinterpret_cast<float*>(arena_->data() + call.outputs[0].offset),
                       static_cast<size_t>(x.shape[0]), calls_++);
    }
    return out;
  }
  Result<CallOutcome> Time(const std::vector<CallSpec>& rotation, int count, bool,
                           double timeout) override {
    if (!alive_) return Dead();
    return Run(rotation[0], kernel_->timed_seconds, count, timeout);
  }
  const Protection& protection() const override { return protection_; }
  bool alive() const override { return alive_; }
  double cpu_seconds() const override { return 0; }

 private:
  CallOutcome Answered() {
    env_.Advance(FakeEnv::kRequestSeconds);
    CallOutcome out;
    out.parent_seconds = FakeEnv::kRequestSeconds;
    return out;
  }
  CallOutcome Dead() const {
    CallOutcome out;
    out.kind = CallOutcome::Kind::kCrash;
    out.detail = "the runner is dead";
    return out;
  }
  // `count` calls of `seconds` each (timed calls alternate around it), the clock moved on.
  CallOutcome Run(const CallSpec&, double seconds, int count, double timeout) {
    CallOutcome out;
    double total = 0;
    for (int i = 0; i < count; ++i) {
      const double jitter = count > 1 ? (i % 2 == 0 ? -1 : 1) * kernel_->jitter : 0;
      const double s = seconds * (1 + jitter);
      total += s;
      out.ns.push_back(static_cast<int64_t>(s * kernel_->reported_scale * 1e9));
    }
    if (kernel_->crashes || total > timeout) {
      alive_ = false;
      const bool timed_out = !kernel_->crashes;
      total = timed_out ? timeout : 0;
      out.ns.clear();
      out.kind = timed_out ? CallOutcome::Kind::kTimeout : CallOutcome::Kind::kCrash;
      out.detail = timed_out ? "killed at the timeout" : "killed by SIGSEGV";
    } else if (kernel_->return_code != 0) {
      out.kind = CallOutcome::Kind::kKernelError;
      out.rc = kernel_->return_code;
    }
    out.parent_seconds = total + FakeEnv::kRequestSeconds;
    env_.Advance(out.parent_seconds);
    return out;
  }

  FakeEnv& env_;
  const FakeKernel* kernel_ = nullptr;
  const SharedArena* arena_ = nullptr;
  Protection protection_;
  bool alive_ = true;
  int calls_ = 0;
};

inline Result<std::unique_ptr<RunnerHandle>> FakeEnv::StartRunner(const RunnerOptions&) {
  return std::unique_ptr<RunnerHandle>(std::make_unique<FakeRunner>(*this));
}

// "Compiles" a source text: the artifact holds the text, the name of a FakeEnv kernel; a
// source that starts with "error" does not compile.
class FakeBackend final : public Backend {
 public:
  FakeBackend(std::filesystem::path dir, std::string device, HardwareInfo hardware)
      : dir_(std::move(dir)), device_(std::move(device)), hardware_(std::move(hardware)) {}

  std::string_view name() const override { return "fake"; }
  std::string_view language() const override { return "cpp"; }
  Result<CompiledKernel> Compile(std::string_view source, std::string_view) override {
    CompiledKernel k;
    if (source.substr(0, 5) == "error") {
      k.diagnostics.push_back({"candidate.cc", 1, 1, "error", std::string(source)});
      return k;
    }
    std::lock_guard<std::mutex> lock(mu_);
    k.artifact = dir_ / ("kernel-" + std::to_string(next_++));
    std::ofstream(k.artifact) << source;
    return k;
  }
  Result<HardwareInfo> Hardware() override { return hardware_; }
  std::string runner_device() const override { return device_; }

 private:
  std::filesystem::path dir_;
  std::string device_;
  HardwareInfo hardware_;
  std::mutex mu_;
  int next_ = 0;
};

}  // namespace kope

#endif  // KOPE_SRC_EVAL_FAKE_ENV_H_
