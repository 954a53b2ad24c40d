// RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight, f32.
// x and y are [..., d] (every leading dimension is a row), weight is [d]. Rows are shared among
// OpenMP threads; each row is summed and scaled with AVX-512 or AVX2 (8 or 16 lanes, kUnroll
// independent accumulators), the tail in scalar code.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr float kEps = 1e-6f;         // kope:attr eps
constexpr int kUnroll = 2;            // kope:tune 1 2 4
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

float SumOfSquares(const float* x, int64_t n) {
  int64_t c = 0;
  float sum = 0.0f;
#if defined(__AVX512F__)
  __m512 acc[kUnroll];
  for (int u = 0; u < kUnroll; ++u) acc[u] = _mm512_setzero_ps();
  for (; c + 16 * kUnroll <= n; c += 16 * kUnroll) {
    for (int u = 0; u < kUnroll; ++u) {
      __m512 v = _mm512_loadu_ps(x + c + 16 * u);
      acc[u] = _mm512_fmadd_ps(v, v, acc[u]);
    }
  }
  for (int u = 1; u < kUnroll; ++u) acc[0] = _mm512_add_ps(acc[0], acc[u]);
  sum = _mm512_reduce_add_ps(acc[0]);
#elif defined(__AVX2__)
  __m256 acc[kUnroll];
  for (int u = 0; u < kUnroll; ++u) acc[u] = _mm256_setzero_ps();
  for (; c + 8 * kUnroll <= n; c += 8 * kUnroll) {
    for (int u = 0; u < kUnroll; ++u) {
      __m256 v = _mm256_loadu_ps(x + c + 8 * u);
      acc[u] = _mm256_fmadd_ps(v, v, acc[u]);
    }
  }
  for (int u = 1; u < kUnroll; ++u) acc[0] = _mm256_add_ps(acc[0], acc[u]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  for (float l : lanes) sum += l;
#endif
  for (; c < n; ++c) sum += x[c] * x[c];
  return sum;
}

void Scale(const float* x, const float* w, float s, float* y, int64_t n) {
  int64_t c = 0;
#if defined(__AVX512F__)
  const __m512 vs = _mm512_set1_ps(s);
  for (; c + 16 <= n; c += 16) {
    __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + c), vs);
    _mm512_storeu_ps(y + c, _mm512_mul_ps(v, _mm512_loadu_ps(w + c)));
  }
#elif defined(__AVX2__)
  const __m256 vs = _mm256_set1_ps(s);
  for (; c + 8 <= n; c += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + c), vs);
    _mm256_storeu_ps(y + c, _mm256_mul_ps(v, _mm256_loadu_ps(w + c)));
  }
#endif
  for (; c < n; ++c) y[c] = x[c] * s * w[c];
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (!Contiguous(x) || !Contiguous(w) || !Contiguous(y) || w.ndim != 1) return 2;
  const int64_t d = w.shape[0];
  if (x.shape[x.ndim - 1] != d || Elements(y) != Elements(x)) return 3;
  const int64_t rows = Elements(x) / d;
  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(w.data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static) if (rows >= 2 * kMinRowsPerThread)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * d;
    const float inv = 1.0f / std::sqrt(SumOfSquares(xr, d) / static_cast<float>(d) + kEps);
    Scale(xr, weight, inv, out + r * d, d);
  }
  return 0;
}
