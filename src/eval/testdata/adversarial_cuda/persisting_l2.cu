// Timing cheat: asks for the largest persisting-L2 carve-out and marks its input persisting
// on the harness's own stream, hoping that the input is still in L2 at the next call.
// Task: gelu_small. Expected: valid and NOT flagged faster_than_roofline (the harness sets
// the carve-out to zero, clears the stream's access window and demotes persisting lines
// before every timed call, then flushes L2).
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
  auto s = static_cast<cudaStream_t>(stream);
  int device = 0, max_persisting = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize, device);
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(max_persisting));
  const int64_t n = Count(inputs[0]);
  cudaStreamAttrValue window = {};
  window.accessPolicyWindow.base_ptr = inputs[0].data;
  window.accessPolicyWindow.num_bytes = static_cast<size_t>(n) * sizeof(float);
  window.accessPolicyWindow.hitRatio = 1.0f;
  window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &window);
  cudaGetLastError();  // where persisting L2 is not supported, carry on without it
  Gelu<<<1024, 256, 0, s>>>(static_cast<const float*>(inputs[0].data),
                            static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
