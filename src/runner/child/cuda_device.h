// The kope-runner child's GPU side: device buffers that mirror the arena, the
// verified call and the timing loop, for kernels of the CUDA backend.
//
// CALL: the call's input and output ranges (outputs with the parent's poison,
// and the bytes after each output up to the next tensor: the guards) are copied
// host to device, the kernel is called with `stream` = the runner's own stream,
// the device is synchronized, and the same ranges (inputs too) are copied back,
// so the parent's checks (poison, guards, input hashes, comparison) apply
// unchanged.
//
// TIME: the rotation's inputs are uploaded on the first TIME after each MAP
// and stay resident. Each call: the persisting-L2 carve-out is reset and L2 is
// flushed (a memset of twice its size), the stream is held by a host-side gate
// while the start event, the kernel's launches and an end event are queued (so
// launch latency is not timed), then released; the device is synchronized and
// a second end event recorded. The stream-ordered time is reported unless work
// outlived the stream (the second end event later than the first by more than
// the calibrated synchronize latency): then the device-wide time is. Kernels
// under 50 us are timed by replaying a CUDA graph of the calls with
// external event nodes (no launch gaps); a kernel that cannot be captured falls
// back to the per-call loop.
//
// A sticky CUDA error (illegal address, device assert, launch timeout) leaves
// the context unusable: the runner prints it to stderr and exits with code 70,
// which the parent records as a crash. A non-sticky error the kernel leaves
// behind is a kernel error (rc -1) with the message. Not thread-safe; used by
// the request loop only.
#ifndef KOPE_SRC_RUNNER_CHILD_CUDA_DEVICE_H_
#define KOPE_SRC_RUNNER_CHILD_CUDA_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kope/base/status.h"
#include "serve.h"

namespace kope::runner_child {

class CudaExecutor {
 public:
  virtual ~CudaExecutor() = default;
  // Makes device memory of `bytes` mirror the host arena at `host` (freeing an earlier
  // mirror); registers the host pages for fast copies where the driver allows. The same
  // arena mapped again keeps its mirror and registration; its inputs are uploaded anew.
  virtual Status Map(uint8_t* host, uint64_t bytes) = 0;
  // The device address of arena offset 0 (null before Map).
  virtual uint8_t* device_base() const = 0;
  virtual void Call(kope_kernel_fn kernel, const PreparedCall& call,
                    runner_protocol::Reply* reply) = 0;
  virtual void Time(kope_kernel_fn kernel, const std::vector<PreparedCall>& rotation,
                    uint32_t count, bool flush, runner_protocol::Reply* reply) = 0;
};

// Creates the CUDA context on GPU N of `spec` ("cuda:N") with the harness's stream and
// events. `max_device_bytes` caps what the kernel allocates itself through the runtime
// (0: no cap). The implementation lives in a plugin beside kope-runner (kCudaPluginName,
// built where the CUDA toolkit is): FailedPrecondition where it is absent or cannot load
// the CUDA runtime, Unavailable when the GPU cannot be opened.
Result<std::unique_ptr<CudaExecutor>> OpenCudaExecutor(const std::string& spec,
                                                       uint64_t max_device_bytes);

inline constexpr const char* kCudaPluginName = "libkope-runner-cuda.so";

// Exit code of a runner whose CUDA context broke (a sticky error).
constexpr int kCudaFatalExitCode = 70;

}  // namespace kope::runner_child

#endif  // KOPE_SRC_RUNNER_CHILD_CUDA_DEVICE_H_
