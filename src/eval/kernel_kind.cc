// Native kernels (the C ABI, compiled by the backend, run by kope-runner), and the choice of
// every kernel's kind for one evaluation.
#include "kernel_kind.h"

#include "kope/base/file.h"

namespace kope {
namespace {

// The task format's name for a PyTorch problem file (task.toml's `[baseline] torch = ...`).
constexpr std::string_view kTorchLanguage = "torch";

// A timed call of a native kernel on a GPU is clocked by the device; on the CPU the clock also
// counts the host's delays (see DecideTiming).
constexpr double kShortestJudgedDeviceClocked = 200e-6;
constexpr double kShortestJudgedHostClocked = 1e-3;

class NativeKernel final : public KernelKind {
 public:
  explicit NativeKernel(Backend& backend) : backend_(backend) {}

  bool bridge() const override { return false; }
  Result<CompiledKernel> BuildTaskKernel(const KernelSource& source, KernelRole role,
                                         const std::filesystem::path& scratch) const override;
  Result<CompiledKernel> BuildCandidate(std::string_view source, std::string_view name,
                                        const std::filesystem::path&) const override {
    return backend_.Compile(source, name);
  }
  RunnerOptions Recipe(const RunnerOptions& common, bool) const override { return common; }
  double LoadTimeout(double call_timeout_seconds) const override { return call_timeout_seconds; }
  bool LoadFailureIsCompileError() const override { return false; }
  size_t spares_ahead() const override { return 1; }
  double shortest_judged_seconds() const override {
    return backend_.runner_device().empty() ? kShortestJudgedHostClocked
                                            : kShortestJudgedDeviceClocked;
  }

 private:
  Backend& backend_;
};

// Compiles a task-owned kernel (baseline or reference); failures are the task's fault.
Result<CompiledKernel> NativeKernel::BuildTaskKernel(const KernelSource& source, KernelRole role,
                                                     const std::filesystem::path&) const {
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(source.path));
  KOPE_ASSIGN_OR_RETURN(CompiledKernel compiled,
                        backend_.Compile(text, source.path.filename().string()));
  if (!compiled.ok()) {
    std::string first = compiled.diagnostics.empty()
                            ? compiled.log
                            : compiled.diagnostics[0].file + ":" +
                                  std::to_string(compiled.diagnostics[0].line) + ": " +
                                  compiled.diagnostics[0].message;
    return Status::FailedPrecondition("the task's " + RoleName(role) + " " + source.path.string() +
                                      " does not compile: " + first);
  }
  return compiled;
}

// The task's kernel for the backend's language, else its PyTorch problem; null when neither.
const KernelSource* Pick(const std::map<std::string, KernelSource>& sources,
                         std::string_view language) {
  auto it = sources.find(std::string(language));
  if (it == sources.end()) it = sources.find(std::string(kTorchLanguage));
  return it == sources.end() ? nullptr : &it->second;
}

}  // namespace

std::string RoleName(KernelRole role) {
  switch (role) {
    case KernelRole::kReference:
      return "reference";
    case KernelRole::kBaseline:
      return "baseline";
    case KernelRole::kCompiled:
      return "compiled";
    case KernelRole::kCandidate:
      return "candidate";
  }
  return "candidate";
}

std::unique_ptr<KernelKind> NativeKernelKind(Backend& backend) {
  return std::make_unique<NativeKernel>(backend);
}

const KernelKind& KernelKinds::KindOf(const KernelSource& source) const {
  return source.language == kTorchLanguage ? *torch_ : *native_;
}

Result<KernelKinds> KernelKinds::Choose(const Task& task, Backend& backend,
                                        std::string_view candidate_name,
                                        bool torch_compile_reference) {
  const std::string_view language = backend.language();
  const KernelSource* baseline = Pick(task.baselines, language);
  if (baseline == nullptr) {
    return Status::InvalidArgument("task " + task.name + " has no baseline for the " +
                                   std::string(backend.name()) + " backend (language '" +
                                   std::string(language) + "')");
  }
  const bool baseline_torch = baseline->language == kTorchLanguage;
  // The task's own reference where it is of the baseline's kind, or the baseline is PyTorch.
  const KernelSource* own_reference = Pick(task.references, language);
  const KernelSource* reference =
      own_reference != nullptr && (own_reference->language == baseline->language || baseline_torch)
          ? own_reference
          : baseline;
  const bool torch_candidate = IsTorchCandidateName(candidate_name);
  const bool torch_task =
      task.torch.has_value() && task.baselines.count(std::string(kTorchLanguage)) > 0;
  if (torch_candidate && !torch_task) {
    return Status::InvalidArgument("'" + std::string(candidate_name) +
                                   "' is a KernelBench-format candidate (.py), but task " +
                                   task.name + " has no PyTorch baseline");
  }
  KernelKinds kinds;
  kinds.native_ = NativeKernelKind(backend);
  if (torch_candidate || baseline_torch || reference->language == kTorchLanguage) {
    KOPE_ASSIGN_OR_RETURN(TorchBridge bridge, FindTorchBridge());
    kinds.bridge_ = std::make_unique<TorchBridge>(std::move(bridge));
    kinds.torch_ = TorchModuleKind(task, *kinds.bridge_);
  }
  kinds.reference_source_ = reference;
  kinds.baseline_source_ = baseline;
  kinds.reference_ = &kinds.KindOf(*reference);
  kinds.baseline_ = &kinds.KindOf(*baseline);
  kinds.candidate_ = torch_candidate ? kinds.torch_.get() : kinds.native_.get();
  if (baseline_torch && torch_compile_reference) kinds.compiled_ = kinds.torch_.get();
  return kinds;
}

}  // namespace kope
