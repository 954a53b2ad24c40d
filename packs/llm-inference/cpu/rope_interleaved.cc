// Rotary embedding in the interleaved (GPT-J, Meta's original Llama) layout, f32: each pair
// (x[2i], x[2i+1]) of a head is rotated by the angle whose cos[t, i], sin[t, i] are given:
//   y[2i] = x[2i] cos - x[2i+1] sin,  y[2i+1] = x[2i] sin + x[2i+1] cos,
// with x and y [tokens, heads, d] and cos, sin [tokens, d / 2]. Tokens are shared among
// OpenMP threads (kThreads); four pairs at a time with AVX2.
#include <immintrin.h>

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

// y = rotated pairs of x: four pairs per AVX2 step (cos and sin each duplicated across the pair,
// the pair swapped within 128-bit lanes), the rest in scalar code.
void RotatePairs(const float* x, const float* c, const float* s, float* y, int64_t half) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256 sign = _mm256_setr_ps(-1, 1, -1, 1, -1, 1, -1, 1);
  for (; i + 4 <= half; i += 4) {
    const __m128 c4 = _mm_loadu_ps(c + i), s4 = _mm_loadu_ps(s + i);
    const __m256 cc = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
    const __m256 ss =
        _mm256_mul_ps(sign, _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4)));
    const __m256 v = _mm256_loadu_ps(x + 2 * i);
    const __m256 swapped = _mm256_permute_ps(v, 0xB1);  // (b, a) for each pair (a, b)
    _mm256_storeu_ps(y + 2 * i, _mm256_fmadd_ps(swapped, ss, _mm256_mul_ps(v, cc)));
  }
#endif
  for (; i < half; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    y[2 * i] = a * c[i] - b * s[i];
    y[2 * i + 1] = a * s[i] + b * c[i];
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  if (!Contiguous(x, 3) || !Contiguous(inputs[1], 2) || !Contiguous(inputs[2], 2) ||
      !Contiguous(outputs[0], 3)) {
    return 2;
  }
  const int64_t tokens = x.shape[0], heads = x.shape[1], d = x.shape[2], half = d / 2;
  if (d % 2 != 0 || inputs[1].shape[0] != tokens || inputs[1].shape[1] != half) return 3;
  const float* in = static_cast<const float*>(x.data);
  const float* cos = static_cast<const float*>(inputs[1].data);
  const float* sin = static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(outputs[0].data);
#pragma omp parallel for schedule(static) num_threads(kThreads) if (kThreads > 1)
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      RotatePairs(in + (t * heads + h) * d, cos + t * half, sin + t * half,
                  out + (t * heads + h) * d, half);
    }
  }
  return 0;
}
