// y = the 4096th iterate of y <- 0.999 y + x from y = 0: one thread per element.
#include <cstdint>

#include "kope/kernel.h"

__global__ void Chain(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float acc = 0.f;
  for (int k = 0; k < 4096; ++k) acc = fmaf(acc, 0.999f, v);
  y[i] = acc;
}

extern "C" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int n_out,
                           void* stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const int64_t n = in[0].shape[0];
  Chain<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
