// KernelKind: what sort of kernel one of an evaluation's kernels is (internal to the
// evaluator).
//
// A native kernel (the C ABI of include/kope/kernel.h) is compiled by the backend and runs in
// kope-runner, on the CPU or on a GPU. A PyTorch module (a KernelBench problem's Model, eager
// or under torch.compile, or a candidate's ModelNew) is not compiled: an artifact (JSON)
// describes it to the Python bridge, which runs it. The kind owns what differs between them:
// how the kernel is built, the recipe its runner is started with, how long its load may take,
// whether a failed load is its compile error, how many of its runners start ahead, and the
// shortest verified call its timed calls are judged against. Where a candidate's outputs are
// checked follows from the kinds of the reference and the candidate (ChecksInReference).
//
// The kinds of one evaluation are chosen in one place, KernelKinds::Choose, from the task, the
// backend and the candidate's name. Kinds are immutable; thread-safe to use.
#ifndef KOPE_SRC_EVAL_KERNEL_KIND_H_
#define KOPE_SRC_EVAL_KERNEL_KIND_H_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/runner/runner.h"
#include "kope/task/task.h"
#include "kope/torch_bridge/bridge.h"

namespace kope {

// What an evaluation's kernel is there for.
enum class KernelRole {
  kReference,  // the outputs a candidate must match
  kBaseline,   // what the candidate is timed against (the reference where there is none)
  kCompiled,   // a PyTorch baseline under torch.compile: a second point of comparison
  kCandidate,
};

class KernelKind {
 public:
  virtual ~KernelKind() = default;

  // Whether the kernel runs in the Python bridge rather than in kope-runner.
  virtual bool bridge() const = 0;
  // A task's own kernel `source` built for `role` (not kCandidate); files it writes go to
  // `scratch`. A kernel that does not build is the task's fault: a Status error.
  virtual Result<CompiledKernel> BuildTaskKernel(const KernelSource& source, KernelRole role,
                                                 const std::filesystem::path& scratch) const = 0;
  // The candidate built; a candidate that does not compile is a CompiledKernel that is not ok().
  virtual Result<CompiledKernel> BuildCandidate(std::string_view source, std::string_view name,
                                                const std::filesystem::path& scratch) const = 0;
  // The options a runner of this kind starts with, from `common` (runner binary, sandbox,
  // device); `task_runner`: for the task's own code (reference, baseline, compiled), which
  // may get what a candidate's never does.
  virtual RunnerOptions Recipe(const RunnerOptions& common, bool task_runner) const = 0;
  // A recipe of its own for the runner of the candidate `source` (a PyTorch candidate that
  // builds an extension gets its source's build cache), else nullopt: Recipe(common, false),
  // whose runners are started ahead as spares.
  virtual std::optional<RunnerOptions> CandidateRecipe(const RunnerOptions&,
                                                       std::string_view /*source*/) const {
    return std::nullopt;
  }
  // How long loading the kernel may take, given the limit of one call.
  virtual double LoadTimeout(double call_timeout_seconds) const = 0;
  // Whether a candidate whose load fails (the kernel, not its runner) did not compile.
  virtual bool LoadFailureIsCompileError() const = 0;
  // How many candidate runners of this kind a pool with spares starts ahead.
  virtual size_t spares_ahead() const = 0;
  // The shortest fastest-verified call a timed median is judged against
  // (kFlagTimedFasterThanVerified): calls long enough for their start to be small.
  virtual double shortest_judged_seconds() const = 0;
};

// "reference", "baseline", "compiled", "candidate".
std::string RoleName(KernelRole role);

// The kinds (kernel_kind.cc, torch_module_kind.cc). A native kernel compiled by `backend`, on
// the CPU or on the backend's device; a PyTorch module of `task` (which has a torch baseline)
// run by `bridge`. Both must outlive the kind.
std::unique_ptr<KernelKind> NativeKernelKind(Backend& backend);
std::unique_ptr<KernelKind> TorchModuleKind(const Task& task, const TorchBridge& bridge);

// Whether a candidate's outputs are checked in the reference's runner (the bridge's checker:
// both are PyTorch bridge processes, and the candidate's tensors live in memory the reference
// shares) rather than by the parent in arenas of its own.
inline bool ChecksInReference(const KernelKind& reference, const KernelKind& candidate) {
  return reference.bridge() && candidate.bridge();
}

// The kinds and sources of one evaluation's kernels.
class KernelKinds {
 public:
  // The task's kernels in the backend's language, a PyTorch problem standing in for both; the
  // candidate's kind from its name (a KernelBench-format candidate is a .py file).
  // InvalidArgument when the task has no baseline for the backend or a PyTorch candidate no
  // PyTorch baseline; NotFound when PyTorch is needed and there is no bridge.
  static Result<KernelKinds> Choose(const Task& task, Backend& backend,
                                    std::string_view candidate_name, bool torch_compile_reference);

  const KernelSource& reference_source() const { return *reference_source_; }
  const KernelSource& baseline_source() const { return *baseline_source_; }
  // Whether the baseline is a kernel of its own (else the reference is timed as the baseline).
  bool separate_baseline() const { return reference_source_->path != baseline_source_->path; }
  const KernelKind& reference() const { return *reference_; }
  const KernelKind& baseline() const { return *baseline_; }
  const KernelKind& candidate() const { return *candidate_; }
  // The torch.compile reference point's kind; null when there is none.
  const KernelKind* compiled() const { return compiled_; }

 private:
  KernelKinds() = default;
  const KernelKind& KindOf(const KernelSource& source) const;

  std::unique_ptr<KernelKind> native_;
  std::unique_ptr<TorchBridge> bridge_;  // null when no kernel is PyTorch
  std::unique_ptr<KernelKind> torch_;
  const KernelSource* reference_source_ = nullptr;
  const KernelSource* baseline_source_ = nullptr;
  const KernelKind* reference_ = nullptr;
  const KernelKind* baseline_ = nullptr;
  const KernelKind* candidate_ = nullptr;
  const KernelKind* compiled_ = nullptr;
};

}  // namespace kope

#endif  // KOPE_SRC_EVAL_KERNEL_KIND_H_
