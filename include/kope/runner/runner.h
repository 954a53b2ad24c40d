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
  // The sum of `ns`, in seconds.
  double kernel_seconds() const {
    double seconds = 0;
    for (int64_t v : ns) seconds += static_cast<double>(v) * 1e-9;
    return seconds;
  }
};

struct RunnerOptions {
  std::filesystem::path runner_exe;  // the kope-runner binary (or an interpreter)
  // Arguments between runner_exe and kope-runner's own (--serve ...), e.g. the script of the
  // Python bridge, which serves the same protocol.
  std::vector<std::string> exe_args;
  SandboxOptions sandbox;  // scratch_dir must exist and be empty
  double start_timeout_seconds = 10;
  // Where the kernel's tensors live: "" (host memory: the arena itself) or "cuda:N"
  // (buffers on GPU N that mirror the arena; see src/runner/child/cuda_device.h). For a GPU the
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
  // `copies` false, for the Python bridge only: the runner's inputs will be drawn on its device
  // (Draw) and no tensor copied through this arena, so the bridge does not pin its host pages
  // now (pinning a fresh arena takes seconds per ten gigabytes); kope-runner rejects it.
  Result<CallOutcome> MapArena(const SharedArena& arena, double timeout_seconds,
                               bool copies = true);

  // One call of the kernel. ns holds one figure.
  Result<CallOutcome> Call(const CallSpec& call, double timeout_seconds);

  // `count` calls, call i on rotation[i % rotation.size()]. With `flush`, the
  // tensors of the coming call are evicted from every cache level (clflush)
  // before it, outside the timed region. Stops at the first non-zero return.
  Result<CallOutcome> Time(const std::vector<CallSpec>& rotation, int count, bool flush,
                           double timeout_seconds);

  // The checking requests, which only the Python bridge serves (python/kope_bridge/checker.py):
  // a task's reference runner checks a candidate's tensors in memory both runners map, so that
  // on a GPU verification moves no tensor through the host. The replies' JSON summaries come
  // back in CallOutcome::detail.
  //
  // Memory of `bytes` laid out like this runner's arena (device memory on a GPU, else a memfd);
  // *fd receives its descriptor, which the caller closes. The same memory again for the same
  // `token` and size, fresh memory for another token (another candidate).
  Result<CallOutcome> ShareArena(uint64_t bytes, uint64_t token, int* fd, double timeout_seconds);
  // Makes the memory another runner shared (`fd`, `bytes`) this runner's arena.
  Result<CallOutcome> MapSharedArena(int fd, uint64_t bytes, double timeout_seconds);
  // Draws the call's inputs into this runner's tensors (on the GPU for a GPU runner) from
  // `seed`, input i from distributions[i] (a task's Distribution, field by field). The same
  // seed draws the same values in every bridge process on the same kind of device.
  struct DrawSpec {
    uint8_t kind = 0;  // Distribution::Kind
    double mean = 0, stddev = 1, low = 0, high = 1, low_exp = -6, high_exp = 6;
    int32_t num_distinct = 8;
  };
  enum class DrawMode : uint8_t {
    kTrial = 0,         // a verification trial's inputs (REF_CALL gives them to the shared memory)
    kPerturb = 1,       // one element of every input redrawn to a different value
    kTiming = 2,        // inputs for TIME: they stay this runner's, TIME uploads nothing over them
    kTimingShared = 3,  // kTiming, and copied to the same slots of the memory this runner shares
    // A trial's inputs as the parent wrote them into this runner's arena (inputs captured where
    // the kernel runs); the distributions are not used. REF_CALL gives them as a trial's.
    kGiven = 4,
  };
  Result<CallOutcome> Draw(const CallSpec& call, uint64_t seed, DrawMode mode,
                           const std::vector<DrawSpec>& distributions, double timeout_seconds);
  // Copies the call's inputs to the shared memory, calls the kernel on its own copy, puts back
  // any input it wrote; with `summarize`, answers whether each output is constant and a
  // fingerprint of it.
  Result<CallOutcome> ReferenceCall(const CallSpec& call, bool summarize, double timeout_seconds);
  struct ByteSpan {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  // Fills each span of the shared memory with `element` repeated, and `guard` after it.
  struct PoisonSpan {
    ByteSpan span;
    std::string element;
  };
  Result<CallOutcome> Poison(const std::vector<PoisonSpan>& spans, const std::string& guard,
                             double timeout_seconds);
  // Compares the shared memory's tensors of `call` with the arena's (rtol, atol per output).
  Result<CallOutcome> Check(const CallSpec& call,
                            const std::vector<std::pair<double, double>>& tolerances,
                            double timeout_seconds);

  const Protection& protection() const;
  int pid() const;
  // The spawned process (bubblewrap, or kope-runner itself), the leader of the process group
  // that the destructor kills: killing that group from another thread ends the runner, and the
  // call it is in returns.
  int process_group() const;
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
