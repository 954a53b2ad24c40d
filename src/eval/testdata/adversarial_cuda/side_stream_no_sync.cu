// Timing cheat: launches the work on a private non-blocking stream and returns without
// synchronizing, so events on the harness stream see nothing to time.
// Task: gelu_small. Expected: valid (the harness synchronizes the device before it reads the
// outputs, so the work is complete) and flagged faster_than_roofline: the side work is too
// short to be charged (cases.toml says why), and the time it leaves is below physics.
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

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int, void*) {
  static cudaStream_t side = nullptr;
  if (side == nullptr && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) {
    return 1;
  }
  const int64_t n = Count(inputs[0]);
  Gelu<<<1024, 256, 0, side>>>(static_cast<const float*>(inputs[0].data),
                               static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
