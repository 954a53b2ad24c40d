// Background work left running: computes the output correctly on the harness stream, then
// starts a 20 ms spin kernel on a private stream and returns. Left running, it would slow
// whatever is timed next (the baseline, interleaved) and make this candidate look faster.
// Task: gelu_small. Expected: valid with a speedup below 1 (the harness waits for the whole
// device before its end event, so the spin is charged to this candidate, not to the baseline).
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

__global__ void SpinFor(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int,
                           void* stream) {
  static cudaStream_t side = nullptr;
  if (side == nullptr && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) {
    return 1;
  }
  const int64_t n = Count(inputs[0]);
  Gelu<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  SpinFor<<<1, 1, 0, side>>>(40LL * 1000 * 1000);  // about 20 ms at 2 GHz
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
