// A launch that cannot run (2048 threads per block) whose error the kernel ignores: it
// returns 0 with nothing computed.
// Task: gelu_small. Expected verdict: runtime_error (the runner reports the CUDA error the
// call left behind instead of comparing unwritten outputs).
#include <cstdint>

#include "kope/kernel.h"

__device__ __forceinline__ float GeluOne(float v) {
  return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

__global__ void Gelu(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = GeluOne(x[i]);
  }
}

int64_t Count(const kope_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int,
                           void* stream) {
  const int64_t n = Count(inputs[0]);
  Gelu<<<1, 2048, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                          static_cast<float*>(outputs[0].data), n);
  return 0;
}
