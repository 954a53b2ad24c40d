// The device memory cap of a CUDA runner (cuda_alloc_cap.cc says how it works).
// Thread-safe.
#ifndef KOPE_SRC_RUNNER_CHILD_CUDA_ALLOC_CAP_H_
#define KOPE_SRC_RUNNER_CHILD_CUDA_ALLOC_CAP_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kope::runner_child {

// Caps the bytes the kernel may hold through the runtime's allocation calls; 0: no cap.
void SetDeviceAllocationCap(uint64_t bytes);
// Bytes the kernel holds now.
uint64_t DeviceBytesAllocatedByKernel();

// The harness's own allocations: not counted against the kernel's cap.
cudaError_t HarnessMalloc(void** p, size_t bytes);
cudaError_t HarnessFree(void* p);

}  // namespace kope::runner_child

#endif  // KOPE_SRC_RUNNER_CHILD_CUDA_ALLOC_CAP_H_
