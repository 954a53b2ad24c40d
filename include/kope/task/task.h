// The task: what to compute, at which sizes, how to check it and what to beat.
//
// A task is a folder holding `task.toml` and kernel sources (the format is
// documented in docs/TASK_FORMAT.md). LoadTask parses and validates it; every
// mistake comes back as an InvalidArgument Status whose message names the
// file, the field and what is wrong, e.g.
//   "examples/softmax/task.toml: inputs[0].dtype: unknown dtype 'f8' (expected one of f32, ...)".
// A loaded Task is a plain value: copyable, immutable by convention, safe to
// share between threads. Nothing here depends on a backend.
#ifndef KOPE_TASK_TASK_H_
#define KOPE_TASK_TASK_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kope/base/status.h"
#include "kope/task/dtype.h"
#include "kope/task/expr.h"

namespace kope {

// How the values of one input are drawn. Floating inputs default to the
// cycle {normal, wide, negative, ties}; integer inputs to uniform [0, 100)
// and take no other kind (low and high are then integers).
struct Distribution {
  enum class Kind {
    kNormal,    // mean, stddev
    kUniform,   // [low, high)
    kWide,      // sign * 10^u, u uniform in [low_exp, high_exp]: wide dynamic range
    kNegative,  // -|normal(0, stddev)| - tiny: every value strictly negative
    kTies,      // drawn from a few distinct values (num_distinct), many exact ties
    kPositive,  // uniform in [low, high) with low > 0, for logs and square roots
  };
  Kind kind = Kind::kNormal;
  double mean = 0.0;
  double stddev = 1.0;
  double low = 0.0;
  double high = 1.0;
  double low_exp = -6.0;
  double high_exp = 6.0;
  int num_distinct = 8;
  // normal and uniform only: values drawn as for a fan-in of 1, divided by sqrt(fan_in) at each
  // size set. PyTorch initializes Linear and convolution weights and biases at that scale; a
  // parameter drawn at one fixed scale at every size saturates a large layer's outputs (a
  // GEMM of fan-in 8192 followed by a hardtanh: every output clamped).
  std::optional<Expr> fan_in;
};

std::string_view DistributionKindName(Distribution::Kind kind);

struct TensorSpec {
  std::string name;
  DType dtype = KOPE_F32;
  std::vector<Expr> shape;  // one expression of the named sizes per dimension
  // Inputs only: trials cycle through these, trial t uses [t % size()].
  std::vector<Distribution> distributions;
};

// Values for every named size, e.g. {M: 1024, N: 1000}.
struct SizeSet {
  std::string label;  // "bench", or "check[2]" for the third check set
  std::map<std::string, int64_t> sizes;
};

// `d` at the sizes of `set`: with a fan_in, its mean, stddev, low and high divided by
// sqrt(fan_in) there (LoadTask checks that fan_in is at least 1 in every set).
Result<Distribution> DistributionAt(const Distribution& d, const SizeSet& set);

// An output element passes when |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

// Defaults by dtype: f32 rtol 1e-5, f64 1e-12, f16 1e-3, bf16 1.6e-2,
// integers exact. A task may set `reduction` (an expression of the sizes,
// the number of terms summed per output element); the default tolerances are
// then scaled by sqrt(reduction). Explicit rtol/atol in the task win.
struct ToleranceSpec {
  std::optional<double> rtol;
  std::optional<double> atol;
  std::optional<Expr> reduction;
};

struct KernelSource {
  std::filesystem::path path;  // absolute, inside the task folder
  std::string language;        // "cpp" (CPU), "cuda", or "torch" (a PyTorch problem file)
};

// A task whose baseline is a PyTorch problem (KernelBench format: `Model`, `get_inputs()`,
// `get_init_inputs()`), run by kope's Python bridge (docs/KERNELBENCH.md).
struct TorchProblem {
  // The problem file's module-level integers that are size names: each size set sets them.
  std::vector<std::string> globals;
  // The module's parameters (named_parameters() order): the last parameters.size() inputs.
  std::vector<std::string> parameters;
  // A KernelBench-format candidate (ModelNew) may not call PyTorch's compute operations.
  bool forbid_torch_ops = false;
  // Forward inputs that forward takes as Python numbers (`s: float`), not tensors: inputs of
  // one element, drawn like any other, passed to the problem's and a ModelNew's forward as
  // numbers (to a native candidate as tensors).
  std::vector<std::string> scalars;
};

struct Task {
  std::filesystem::path dir;  // absolute path of the task folder
  std::string name;
  std::string family;  // op family: elementwise, softmax, matmul, ...
  std::string description;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  SizeSet bench;
  // Bench sets for one language (`bench_cuda = {...}`), replacing `bench` there.
  std::map<std::string, SizeSet> language_bench;
  std::vector<SizeSet> checks;  // at least one
  ToleranceSpec tolerance;
  // Baselines by language ("cpp", "cuda", "torch"); at least one. A "torch" baseline is the
  // baseline (and reference) of every language that has none of its own.
  std::map<std::string, KernelSource> baselines;
  // References by language; where absent the baseline of that language is the reference.
  std::map<std::string, KernelSource> references;
  std::optional<Expr> bytes;          // bytes a kernel must move at least, for the roofline
  std::optional<Expr> flops;          // floating-point operations, for the roofline
  std::optional<TorchProblem> torch;  // set exactly when a baseline is "torch"
  // Inputs captured where the kernel runs (a safetensors file in the task folder, absolute once
  // loaded; task/captured.h): verification adds a trial on them at every size set they fit.
  std::optional<std::filesystem::path> captured_inputs;
};

// Reads and validates `dir/task.toml` and checks that the sources it names exist.
// Stops at the first broken rule. A missing task.toml is NotFound, an unreadable
// one IoError, anything wrong in it InvalidArgument; every message starts with
// `dir / "task.toml"` as given. Source paths in the result are absolute.
Result<Task> LoadTask(const std::filesystem::path& dir);

// The most bytes a task's tensors may take at one size set, together (1 TiB): a task asking
// for more is refused when it is loaded, before anything is allocated.
inline constexpr int64_t kMaxSizeSetBytes = int64_t{1} << 40;

// The concrete shape of `spec` at `sizes` (every dimension >= 1, at most kMaxSizeSetBytes).
Result<std::vector<int64_t>> ResolveShape(const TensorSpec& spec, const SizeSet& sizes);

// The tolerance for an output of `dtype` at `sizes`.
Result<Tolerance> ResolveTolerance(const ToleranceSpec& spec, DType dtype, const SizeSet& sizes);

// Every size set the task declares: the checks, bench, then the per-language benches.
std::vector<SizeSet> AllSizeSets(const Task& task);

// The bench set for kernels in `language` ("cpp", "cuda"): its own, or the common one.
const SizeSet& BenchSizes(const Task& task, std::string_view language);
// The sets a kernel in `language` is verified on: the checks, then its bench set.
std::vector<SizeSet> SizeSetsFor(const Task& task, std::string_view language);

}  // namespace kope

#endif  // KOPE_TASK_TASK_H_
