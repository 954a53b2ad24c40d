// Exhausting device memory: allocates 1 GiB blocks until it holds 100 GiB (kept across calls),
// and computes correctly only if it got them all.
// Task: gelu_small. Expected verdict: runtime_error (the runner caps what a kernel may
// allocate, 16 GiB by default, so an allocation fails and the kernel returns 3; without the
// cap an H200 would grant all 100 GiB and the candidate would be valid).
#include <cstdint>
#include <vector>

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
  static std::vector<void*> held;
  while (held.size() < 100) {
    void* p = nullptr;
    if (cudaMalloc(&p, 1ull << 30) != cudaSuccess) {
      cudaGetLastError();
      return 3;
    }
    held.push_back(p);
  }
  const int64_t n = Count(inputs[0]);
  Gelu<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
