// A decoder layer's fused residual add + RMSNorm, f32: h = x + residual; residual_out = h;
// y = h / sqrt(mean(h^2) + eps) * weight, over the last dimension. x, residual, y and
// residual_out are [..., d], weight is [d]. One pass per row adds, stores h and sums its squares
// (AVX-512 or AVX2), a second scales; rows are shared among OpenMP threads.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kope/kernel.h"

constexpr float kEps = 1e-6f;         // kope:attr eps
constexpr int kMinRowsPerThread = 4;  // kope:tune 1 4 16

namespace {

bool Contiguous(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim < 1) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

int64_t Elements(const kope_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

// h = x + r, stored; returns the sum of h^2.
float AddAndSum(const float* x, const float* r, float* h, int64_t n) {
  int64_t c = 0;
  float sum = 0.0f;
#if defined(__AVX512F__)
  __m512 acc = _mm512_setzero_ps();
  for (; c + 16 <= n; c += 16) {
    const __m512 v = _mm512_add_ps(_mm512_loadu_ps(x + c), _mm512_loadu_ps(r + c));
    _mm512_storeu_ps(h + c, v);
    acc = _mm512_fmadd_ps(v, v, acc);
  }
  sum = _mm512_reduce_add_ps(acc);
#elif defined(__AVX2__)
  __m256 acc = _mm256_setzero_ps();
  for (; c + 8 <= n; c += 8) {
    const __m256 v = _mm256_add_ps(_mm256_loadu_ps(x + c), _mm256_loadu_ps(r + c));
    _mm256_storeu_ps(h + c, v);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float l : lanes) sum += l;
#endif
  for (; c < n; ++c) {
    h[c] = x[c] + r[c];
    sum += h[c] * h[c];
  }
  return sum;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 2) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& res = inputs[1];
  const kope_tensor& w = inputs[2];
  kope_tensor& y = outputs[0];
  kope_tensor& h = outputs[1];
  for (const kope_tensor* t :
       {&x, &res, &w, static_cast<const kope_tensor*>(&y), static_cast<const kope_tensor*>(&h)}) {
    if (!Contiguous(*t)) return 2;
  }
  const int64_t d = w.shape[w.ndim - 1];
  const int64_t total = Elements(x);
  if (Elements(res) != total || Elements(y) != total || Elements(h) != total) return 3;
  const int64_t rows = total / d;
  const float* in = static_cast<const float*>(x.data);
  const float* rin = static_cast<const float*>(res.data);
  const float* weight = static_cast<const float*>(w.data);
  float* out = static_cast<float*>(y.data);
  float* hout = static_cast<float*>(h.data);
#pragma omp parallel for schedule(static) if (rows >= 2 * kMinRowsPerThread)
  for (int64_t r = 0; r < rows; ++r) {
    float* hr = hout + r * d;
    const float sum = AddAndSum(in + r * d, rin + r * d, hr, d);
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(d) + kEps);
    float* yr = out + r * d;
#pragma omp simd
    for (int64_t c = 0; c < d; ++c) yr[c] = hr[c] * inv * weight[c];
  }
  return 0;
}
