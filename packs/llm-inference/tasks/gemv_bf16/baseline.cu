// y = x @ w^T, bf16, one thread per output element: the naive GPU baseline.
#include <cuda_bf16.h>

#include <cstdint>

#include "kope/kernel.h"

__global__ void Each(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int64_t m,
                     int64_t n, int64_t k) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= m * n) return;
  const int64_t r = i / n, c = i % n;
  float acc = 0.0f;
  for (int64_t j = 0; j < k; ++j)
    acc += __bfloat162float(x[r * k + j]) * __bfloat162float(w[c * k + j]);
  y[i] = __float2bfloat16_rn(acc);
}

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[0];
  Each<<<(m * n + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(inputs[0].data),
      static_cast<const __nv_bfloat16*>(inputs[1].data),
      static_cast<__nv_bfloat16*>(outputs[0].data), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
