// Runner: the parent's handle on one sandboxed `kope-runner` child process.
//
// The child loads exactly one compiled kernel (a shared object), maps the
// SharedArena the parent gives it, and calls the kernel on tensors that live
// in the arena. It returns only return codes and timings; outputs are read by
// the parent straight from the arena. The child never decides a verdict.
//
// Everything a kernel can do wrong is a value in the outcome (kCrash,
// kTimeout, kKernelError); a Status error means kope could not do its own part
// (spawn, socket, protocol). After kCrash or kTimeout the runner is dead and
// every later call returns the same outcome. The destructor kills the child's
// process group. Not thread-safe: one owner drives one runner.
//
// The child dies with the thread that called Start (PR_SET_PDEATHSIG follows
// the thread, not the process): start a runner from a thread that outlives it.
// Inside scratch_dir the parent keeps `kernels/` (the loaded copies),
// `runner.log` (the child's stdout and stderr, at most max_file_bytes) and
// `work/`, the child's working folder and its only writable place (a tmpfs of
// limits.writable_bytes under bubblewrap). The child's environment is PATH,
// LANG and the OMP_/GOMP_ variables of the parent; nothing else (no secrets).
#ifndef KOPE_RUNNER_RUNNER_H_
#define KOPE_RUNNER_RUNNER_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kope/base/status.h"
#include "kope/runner/arena.h"
#include "kope/runner/sandbox.h"
#include "kope/task/dtype.h"

namespace kope {

// A tensor that lives in the arena, `offset` bytes from its start.
struct TensorSlot {
  DType dtype = KOPE_F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
  uint64_t offset = 0;
};

struct CallSpec {
  std::vector<TensorSlot> inputs;
  std::vector<TensorSlot> outputs;
};

struct CallOutcome {
  enum class Kind {
    kOk,           // the kernel returned 0
    kKernelError,  // the kernel returned non-zero (rc)
    kCrash,        // the child died (signal, abort, exit)
    kTimeout,      // the child was killed at the timeout
  };
  Kind kind = Kind::kOk;
  int rc = 0;
  int term_signal = 0;
  std::string detail;         // e.g. "killed by SIGSEGV", the tail of the child's stderr
  std::vector<int64_t> ns;    // per-call kernel time in nanoseconds, as the child measured it
  double parent_seconds = 0;  // the parent's wall clock around the whole request
  // Time with flush: bytes of tensors evicted from the caches, all calls.
  uint64_t flushed_bytes = 0;
  // Wall time the child spent copying tensors between the arena and a GPU, as it measured it.
  double copy_seconds = 0;
  bool ok() const { return kind == Kind::kOk; }
};

struct RunnerOptions {
  std::filesystem::path runner_exe;  // the kope-runner binary (or an interpreter)
  // Arguments between runner_exe and kope-runner's own (--serve ...), e.g. the script of the
  // Python bridge, which serves the same protocol.
  std::vector<std::string> exe_args;
  SandboxOptions sandbox;  // scratch_dir must exist and be empty
  double start_timeout_seconds = 10;
  // Where the kernel's tensors live: "" (host memory: the arena itself) or "cuda:N"
  // (buffers on GPU N that mirror the arena; see src/runner/cuda_device.h). For a GPU the
  // NVIDIA device nodes and /sys are added to the sandbox, RLIMIT_AS gives way to
  // RLIMIT_DATA at the same size, the CPU-time limit is at least 900 s (the host thread
  // spins while it waits for the GPU), limits.max_device_bytes caps the kernel's own device
  // allocations, and the child also gets LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES and
  // CUDA_DEVICE_ORDER from the parent.
  std::string device;
};

class Runner {
 public:
  // Spawns the sandboxed child. The scratch folder is the child's only writable place.
  static Result<std::unique_ptr<Runner>> Start(const RunnerOptions& options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Copies `shared_object` into scratch and dlopens it there; a missing
  // kope_kernel symbol or a failing dlopen is kKernelError with the reason in detail.
  Result<CallOutcome> Load(const std::filesystem::path& shared_object, double timeout_seconds);

  // Makes `arena` the memory that TensorSlot offsets refer to (replacing any earlier one).
  Result<CallOutcome> MapArena(const SharedArena& arena, double timeout_seconds);

  // One call of the kernel. ns holds one figure.
  Result<CallOutcome> Call(const CallSpec& call, double timeout_seconds);

  // `count` calls, call i on rotation[i % rotation.size()]. With `flush`, the
  // tensors of the coming call are evicted from every cache level (clflush)
  // before it, outside the timed region. Stops at the first non-zero return.
  Result<CallOutcome> Time(const std::vector<CallSpec>& rotation, int count, bool flush,
                           double timeout_seconds);

  const Protection& protection() const;
  int pid() const;
  bool alive() const;

  class Impl;

 private:
  explicit Runner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The kope-runner binary next to the running kope executable, or KOPE_RUNNER from the environment.
Result<std::filesystem::path> FindRunnerExecutable();

}  // namespace kope

#endif  // KOPE_RUNNER_RUNNER_H_
