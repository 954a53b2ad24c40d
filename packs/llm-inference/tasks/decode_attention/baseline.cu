// Decode attention, one thread per (batch, query head), three passes over the cache in f32:
// the naive GPU baseline (and the reference).
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

__global__ void Each(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                     __nv_bfloat16* o, int64_t b, int64_t hq, int64_t hkv, int64_t s, int64_t d) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= b * hq) return;
  const int64_t batch = i / hq, h = i % hq, kvh = h / (hq / hkv);
  const __nv_bfloat16* qr = q + i * d;
  const __nv_bfloat16* kb = k + (batch * hkv + kvh) * s * d;
  const __nv_bfloat16* vb = v + (batch * hkv + kvh) * s * d;
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  float mx = -INFINITY;
  for (int64_t j = 0; j < s; ++j) {
    float dot = 0.0f;
    for (int64_t c = 0; c < d; ++c)
      dot += __bfloat162float(qr[c]) * __bfloat162float(kb[j * d + c]);
    mx = fmaxf(mx, dot * scale);
  }
  float den = 0.0f;
  for (int64_t c = 0; c < d; ++c) o[i * d + c] = __float2bfloat16_rn(0.0f);
  for (int64_t c = 0; c < d; ++c) {
    float num = 0.0f;
    den = 0.0f;
    for (int64_t j = 0; j < s; ++j) {
      float dot = 0.0f;
      for (int64_t e = 0; e < d; ++e)
        dot += __bfloat162float(qr[e]) * __bfloat162float(kb[j * d + e]);
      const float p = expf(dot * scale - mx);
      den += p;
      num += p * __bfloat162float(vb[j * d + c]);
    }
    o[i * d + c] = __float2bfloat16_rn(num / den);
  }
}

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& k = inputs[1];
  const int64_t b = k.shape[0], hkv = k.shape[1], s = k.shape[2], d = k.shape[3];
  const int64_t hq = inputs[0].shape[1];
  Each<<<(b * hq + 63) / 64, 64, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(inputs[0].data), static_cast<const __nv_bfloat16*>(k.data),
      static_cast<const __nv_bfloat16*>(inputs[2].data),
      static_cast<__nv_bfloat16*>(outputs[0].data), b, hq, hkv, s, d);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
