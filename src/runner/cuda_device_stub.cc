// OpenCudaExecutor for kope-runner builds without the CUDA toolkit.
#include "cuda_device.h"

namespace kope::runner_child {

Result<std::unique_ptr<CudaExecutor>> OpenCudaExecutor(const std::string& spec,
                                                       uint64_t max_device_bytes) {
  (void)max_device_bytes;
  return Status::FailedPrecondition("this kope-runner was built without the CUDA toolkit; it "
                                    "cannot run kernels on " +
                                    spec);
}

}  // namespace kope::runner_child
