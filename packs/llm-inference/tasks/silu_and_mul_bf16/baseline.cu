// SwiGLU's gate, bf16, one thread per element: the naive GPU baseline.
#include <cuda_bf16.h>

#include <cstdint>

#include "kope/kernel.h"

__global__ void Each(const __nv_bfloat16* g, const __nv_bfloat16* u, __nv_bfloat16* y, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const float x = __bfloat162float(g[i]);
  y[i] = __float2bfloat16_rn(x / (1.0f + expf(-x)) * __bfloat162float(u[i]));
}

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  Each<<<(n + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(inputs[0].data),
      static_cast<const __nv_bfloat16*>(inputs[1].data),
      static_cast<__nv_bfloat16*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
