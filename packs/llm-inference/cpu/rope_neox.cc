// Rotary embedding in HF's rotate_half layout (Llama, GPT-NeoX), f32:
//   y = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x[d/2:], x[:d/2]],
// with x and y [b, h, s, d] and cos, sin [b, s, d] (as LlamaRotaryEmbedding returns them,
// both halves equal). (b, h) planes are shared among OpenMP threads (kThreads); each row is two
// SIMD loops.
#include <cstdint>

#include "kope/kernel.h"

// One thread streams at the memory bandwidth of a small machine; more help where one core
// cannot.
constexpr int kThreads = 1;  // kope:tune 1 2 4

namespace {

bool Contiguous(const kope_tensor& t, int ndim) {
  if (t.dtype != KOPE_F32 || t.ndim != ndim) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  if (!Contiguous(x, 4) || !Contiguous(inputs[1], 3) || !Contiguous(inputs[2], 3) ||
      !Contiguous(outputs[0], 4)) {
    return 2;
  }
  const int64_t b = x.shape[0], h = x.shape[1], s = x.shape[2], d = x.shape[3];
  if (d % 2 != 0 || inputs[1].shape[0] != b || inputs[1].shape[1] != s || inputs[1].shape[2] != d) {
    return 3;
  }
  const int64_t half = d / 2;
  const float* in = static_cast<const float*>(x.data);
  const float* cos = static_cast<const float*>(inputs[1].data);
  const float* sin = static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(outputs[0].data);
#pragma omp parallel for collapse(2) schedule(static) num_threads(kThreads) if (kThreads > 1)
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < h; ++j) {
      for (int64_t t = 0; t < s; ++t) {
        const float* xr = in + ((i * h + j) * s + t) * d;
        const float* c = cos + (i * s + t) * d;
        const float* sn = sin + (i * s + t) * d;
        float* yr = out + ((i * h + j) * s + t) * d;
#pragma omp simd
        for (int64_t k = 0; k < half; ++k) yr[k] = xr[k] * c[k] - xr[k + half] * sn[k];
#pragma omp simd
        for (int64_t k = half; k < d; ++k) yr[k] = xr[k] * c[k] + xr[k - half] * sn[k];
      }
    }
  }
  return 0;
}
