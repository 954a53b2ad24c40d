// Contain: writes through a wild device pointer. The launch fails with an illegal address, a
// sticky error that poisons the CUDA context.
// Task: gelu_small. Expected verdict: crash (the runner reports the error and exits; the next
// candidate gets a fresh runner).
#include <cstdint>

#include "kope/kernel.h"

__global__ void Wild(float* y) { y[threadIdx.x] = 1.0f; }

extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void* stream) {
  Wild<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(reinterpret_cast<float*>(0x10));
  return 0;
}
