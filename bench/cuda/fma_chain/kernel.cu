// The same chain, two elements per thread so that two independent FMA chains hide latency.
#include <cstdint>

#include "kope/kernel.h"

__global__ void Chain2(const float* x, float* y, int64_t n) {
  const int64_t i = 2 * (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x);
  if (i >= n) return;
  const float v0 = x[i], v1 = i + 1 < n ? x[i + 1] : 0.f;
  float a0 = 0.f, a1 = 0.f;
#pragma unroll 8
  for (int k = 0; k < 4096; ++k) {
    a0 = fmaf(a0, 0.999f, v0);
    a1 = fmaf(a1, 0.999f, v1);
  }
  y[i] = a0;
  if (i + 1 < n) y[i + 1] = a1;
}

extern "C" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int n_out,
                           void* stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const int64_t n = in[0].shape[0];
  const int64_t threads = (n + 1) / 2;
  Chain2<<<static_cast<unsigned>((threads + 255) / 256), 256, 0,
           static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(in[0].data),
                                                static_cast<float*>(out[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
