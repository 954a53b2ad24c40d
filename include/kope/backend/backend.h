// Backend: turns kernel source into something a runner can load, and
// describes the hardware it runs on.
//
// One implementation per target (CPU now, CUDA next). A compile error is a
// value (CompiledKernel::ok() false, with diagnostics); a Status error means
// the backend itself failed (no compiler, unwritable cache). Implementations
// are thread-safe: several compiles may run at once.
#ifndef KOPE_BACKEND_BACKEND_H_
#define KOPE_BACKEND_BACKEND_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kope/backend/hardware.h"
#include "kope/base/status.h"

namespace kope {

// One compiler message, trimmed to what a reader needs.
struct Diagnostic {
  std::string file;  // as the source was named, e.g. "optimized.cc"
  int line = 0;      // 1-based; 0 when the message has no location (linker)
  int column = 0;
  std::string severity;  // "error", "warning", "note"
  std::string message;   // the message, plus the source excerpt lines the compiler printed
};

// The compiler's resource report for one device function (CUDA: ptxas -v). Empty on the CPU.
struct KernelResources {
  std::string function;  // the entry ptxas reports, demangled: "scale(float const*, float*, long)"
  std::string arch;      // e.g. "sm_90a"
  int registers = 0;     // per thread
  int64_t shared_bytes = 0;    // static shared memory per block
  int64_t constant_bytes = 0;  // constant bank 0 (kernel parameters included)
  int64_t stack_bytes = 0;     // stack frame per thread
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
};

// A profiler's compact summary of one valid candidate (CUDA: Nsight Compute). Metrics that
// the tool could not read are absent; `note` says why.
struct KernelProfile {
  std::string tool;    // e.g. "ncu 2025.3.1"
  std::string kernel;  // the profiled kernel (the longest launch of the call)
  int launches = 0;    // device kernels the call launched
  std::vector<std::pair<std::string, double>> metrics;  // name, value (units in the name)
  std::string limiter;  // the unit with the highest throughput, e.g. "dram"
  std::string note;
};

// A memory/race checker's verdict on a candidate (CUDA: compute-sanitizer), used as a gate.
struct SanitizerReport {
  std::vector<std::string> tools;  // the tools that ran, e.g. "memcheck"
  bool clean = true;               // no tool reported an error
  std::string first_error;         // the first error a tool printed, trimmed
  std::string note;                // a tool that could not run, and why
};

// One set of tensor shapes a kernel is run on outside the evaluator (profiling, sanitizing).
struct LaunchShapes {
  struct Tensor {
    int dtype = 0;  // kope_dtype
    std::vector<int64_t> shape;
  };
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::string label;  // e.g. "bench"
};

struct CompiledKernel {
  std::filesystem::path artifact;       // the loadable object; empty when compilation failed
  std::vector<Diagnostic> diagnostics;  // errors first, at most a handful
  std::string log;                      // the compiler's output, trimmed
  std::string cache_key;                // content address of (source, flags, compiler, ABI header)
  bool cache_hit = false;
  double seconds = 0;                      // compile wall time (0 on a cache hit)
  std::vector<KernelResources> resources;  // device functions' resources (CUDA), kept in the cache
  bool ok() const { return !artifact.empty(); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu" or "cuda".
  virtual std::string_view name() const = 0;
  // The task language this backend compiles: "cpp" or "cuda".
  virtual std::string_view language() const = 0;
  // Compiles `source` (the text of one kernel file); `display_name` is used in diagnostics.
  virtual Result<CompiledKernel> Compile(std::string_view source,
                                         std::string_view display_name) = 0;
  // The machine's description, with measured bandwidth and peak (measured once, then cached).
  virtual Result<HardwareInfo> Hardware() = 0;
  // Where a runner must put the tensors for kernels of this backend: "" for host memory,
  // "cuda:N" for buffers on GPU N (RunnerOptions::device).
  virtual std::string runner_device() const { return ""; }
  // Runs the backend's profiler on one call of a compiled kernel; FailedPrecondition where the
  // backend has none. The kernel must already have been judged valid.
  virtual Result<KernelProfile> Profile(const CompiledKernel& kernel, const LaunchShapes& shapes) {
    (void)kernel;
    (void)shapes;
    return Status::FailedPrecondition("the " + std::string(name()) + " backend has no profiler");
  }
  // Runs the backend's memory and race checkers on one call per shape set; FailedPrecondition
  // where the backend has none.
  virtual Result<SanitizerReport> Sanitize(const CompiledKernel& kernel,
                                           const std::vector<LaunchShapes>& shapes) {
    (void)kernel;
    (void)shapes;
    return Status::FailedPrecondition("the " + std::string(name()) + " backend has no sanitizer");
  }
};

// Where kope caches compiled kernels and hardware figures:
// $KOPE_CACHE_DIR, else $XDG_CACHE_HOME/kope, else ~/.cache/kope.
std::filesystem::path DefaultCacheDir();

}  // namespace kope

#endif  // KOPE_BACKEND_BACKEND_H_
