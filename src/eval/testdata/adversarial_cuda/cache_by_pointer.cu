// Caching across calls: computes once per output pointer into a private device buffer and
// afterwards only copies that buffer out, as long as the input pointer is the same (device
// pointers stay the same from call to call).
// Task: gelu_small. Expected verdict: incorrect (new values in the same buffers must change
// the output; the harness rewrites inputs between trials and perturbs one element).
#include <cstdint>
#include <map>
#include <utility>

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
  static std::map<std::pair<const void*, void*>, float*> cache;
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t n = Count(inputs[0]);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  auto key = std::make_pair(static_cast<const void*>(inputs[0].data), outputs[0].data);
  auto it = cache.find(key);
  if (it == cache.end()) {
    float* copy = nullptr;
    if (cudaMalloc(&copy, bytes) != cudaSuccess) return 1;
    Gelu<<<1024, 256, 0, s>>>(static_cast<const float*>(inputs[0].data), copy, n);
    it = cache.emplace(key, copy).first;
  }
  cudaMemcpyAsync(outputs[0].data, it->second, bytes, cudaMemcpyDeviceToDevice, s);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
