// Softmax over the last dimension, f32: x and y are [..., n]. One pass finds the row's maximum
// (AVX-512 or AVX2 max), a second writes exp(x - max) and sums it, a third scales by 1 / sum;
// rows are shared among OpenMP threads.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr int kMinRowsPerThread = 4;  // kope:tune 1 4 16

namespace {

int64_t Elements(const kope_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

bool Contiguous(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim < 1) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

float RowMax(const float* x, int64_t n) {
  int64_t c = 0;
  float m = -INFINITY;
#if defined(__AVX512F__)
  __m512 v = _mm512_set1_ps(-INFINITY);
  for (; c + 16 <= n; c += 16) v = _mm512_max_ps(v, _mm512_loadu_ps(x + c));
  m = _mm512_reduce_max_ps(v);
#elif defined(__AVX2__)
  __m256 v = _mm256_set1_ps(-INFINITY);
  for (; c + 8 <= n; c += 8) v = _mm256_max_ps(v, _mm256_loadu_ps(x + c));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  for (float l : lanes) m = l > m ? l : m;
#endif
  for (; c < n; ++c) m = x[c] > m ? x[c] : m;
  return m;
}

void SoftmaxRow(const float* x, float* y, int64_t n) {
  const float m = RowMax(x, n);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; ++c) {
    y[c] = std::exp(x[c] - m);
    sum += y[c];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) y[c] *= inv;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (!Contiguous(x) || !Contiguous(y) || Elements(x) != Elements(y)) return 2;
  const int64_t n = x.shape[x.ndim - 1];
  const int64_t rows = Elements(x) / n;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static) if (rows >= 2 * kMinRowsPerThread)
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow(in + r * n, out + r * n, n);
  return 0;
}
