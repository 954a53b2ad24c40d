// Contain: a kernel that never finishes. The call never returns to the harness.
// Task: gelu_small. Expected verdict: timeout (the runner is killed, which ends its context and
// the kernel with it).
#include "kope/kernel.h"

__global__ void Spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor* outputs, int, void* stream) {
  cudaMemsetAsync(outputs[0].data, 0, 4, static_cast<cudaStream_t>(stream));
  Spin<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<volatile int*>(outputs[0].data));
  return 0;
}
