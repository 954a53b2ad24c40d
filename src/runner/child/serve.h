// The kope-runner child's request loop: LOAD, MAP, CALL, TIME, QUIT over the
// control socket (protocol.h). It runs candidate code, so it trusts nothing the
// kernel leaves behind, and validates every request before acting on it.
#ifndef KOPE_SRC_RUNNER_CHILD_SERVE_H_
#define KOPE_SRC_RUNNER_CHILD_SERVE_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "../protocol.h"
#include "kope/kernel.h"

namespace kope::runner_child {

// The tensors of one call, as the kernel will see them, and their byte ranges
// in the arena: the inputs' first, then the outputs'.
struct PreparedCall {
  std::vector<kope_tensor> inputs;
  std::vector<kope_tensor> outputs;
  std::vector<runner_protocol::ByteRange> ranges;
};

// Where the runner puts tensors: host memory (the arena itself), or GPU
// buffers mirroring the arena ("cuda:N", cuda_device.h).
struct DeviceOptions {
  std::string device;             // "" or "cuda:N"
  uint64_t max_device_bytes = 0;  // what the kernel may allocate on the GPU itself; 0: no cap
};

// Serves requests on `sock` until QUIT or until the parent goes away. Kernels
// may only be loaded from `kernels_dir`. Returns the process exit code.
int Serve(int sock, const std::filesystem::path& kernels_dir, const DeviceOptions& device = {});

}  // namespace kope::runner_child

#endif  // KOPE_SRC_RUNNER_CHILD_SERVE_H_
