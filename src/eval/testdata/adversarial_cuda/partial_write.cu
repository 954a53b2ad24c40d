// Partial output: leaves the last 0.1% of the elements (at least one) unwritten.
// Task: gelu_small. Expected verdict: incorrect (the poison written before the call shows).
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
  const int64_t skip = n / 1000 > 0 ? n / 1000 : 1;
  if (n - skip > 0) {
    Gelu<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n - skip);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
