// Out-of-bounds write: computes the output correctly and also writes 16 elements past its
// end (inside the allocation, so nothing faults).
// Task: gelu_small. Expected verdict: incorrect (guard_overwritten: the bytes after every output
// are copied to the GPU and back with it and must come back intact).
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

__global__ void Scribble(float* y, int64_t n) { y[n + threadIdx.x] = 42.0f; }

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int,
                           void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t n = Count(inputs[0]);
  Gelu<<<1024, 256, 0, s>>>(static_cast<const float*>(inputs[0].data),
                            static_cast<float*>(outputs[0].data), n);
  Scribble<<<1, 16, 0, s>>>(static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
