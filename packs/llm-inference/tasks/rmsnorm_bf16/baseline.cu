// RMSNorm (eps = 1e-6), bf16 in and out, one thread per row: the naive GPU baseline.
#include <cuda_bf16.h>

#include <cstdint>

#include "kope/kernel.h"

__global__ void Rows(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int64_t rows,
                     int64_t d) {
  const int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  float sum = 0.0f;
  for (int64_t c = 0; c < d; ++c)
    sum += __bfloat162float(x[r * d + c]) * __bfloat162float(x[r * d + c]);
  const float inv = rsqrtf(sum / static_cast<float>(d) + 1e-6f);
  for (int64_t c = 0; c < d; ++c) {
    y[r * d + c] =
        __float2bfloat16_rn(__bfloat162float(x[r * d + c]) * inv * __bfloat162float(w[c]));
  }
}

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0], d = inputs[0].shape[1];
  Rows<<<(rows + 127) / 128, 128, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(inputs[0].data),
      static_cast<const __nv_bfloat16*>(inputs[1].data),
      static_cast<__nv_bfloat16*>(outputs[0].data), rows, d);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
