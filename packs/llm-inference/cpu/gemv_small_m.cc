// Decode's small-M GEMV of a Linear layer: y[m, n] = sum_k x[m, k] * w[n, k], f32, M = 1..16
// (x [..., k] with any leading dimensions, w [n, k] as nn.Linear keeps it, y [..., n]). The weight
// is the traffic: each of its rows is read once and used for kRowsPerPass rows of x at a time;
// output columns are shared among OpenMP threads. AVX-512 or AVX2 FMA, one accumulator per row.
#include <immintrin.h>

#include <cstdint>

#include "kope/kernel.h"

constexpr int kRowsPerPass = 4;  // kope:tune 1 2 4 8

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

// y[r][col] for rows [r0, r0 + rows) of x and one weight row.
void DotRows(const float* x, const float* wrow, int64_t k, int rows, float* out, int64_t n) {
  int64_t c = 0;
  float tail[kRowsPerPass] = {};
#if defined(__AVX512F__)
  __m512 acc[kRowsPerPass];
  for (int r = 0; r < rows; ++r) acc[r] = _mm512_setzero_ps();
  for (; c + 16 <= k; c += 16) {
    const __m512 w = _mm512_loadu_ps(wrow + c);
    for (int r = 0; r < rows; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(x + r * k + c), w, acc[r]);
  }
  for (int r = 0; r < rows; ++r) tail[r] = _mm512_reduce_add_ps(acc[r]);
#elif defined(__AVX2__)
  __m256 acc[kRowsPerPass];
  for (int r = 0; r < rows; ++r) acc[r] = _mm256_setzero_ps();
  for (; c + 8 <= k; c += 8) {
    const __m256 w = _mm256_loadu_ps(wrow + c);
    for (int r = 0; r < rows; ++r)
      acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * k + c), w, acc[r]);
  }
  alignas(32) float lanes[8];
  for (int r = 0; r < rows; ++r) {
    _mm256_store_ps(lanes, acc[r]);
    for (float l : lanes) tail[r] += l;
  }
#endif
  for (; c < k; ++c) {
    for (int r = 0; r < rows; ++r) tail[r] += x[r * k + c] * wrow[c];
  }
  for (int r = 0; r < rows; ++r) out[r * n] = tail[r];
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (!Contiguous(x) || !Contiguous(w) || !Contiguous(y) || w.ndim != 2) return 2;
  const int64_t n = w.shape[0], k = w.shape[1];
  if (x.shape[x.ndim - 1] != k || y.shape[y.ndim - 1] != n) return 3;
  int64_t m = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) m *= x.shape[d];
  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(w.data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static) if (n * k >= (1 << 16))
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t r0 = 0; r0 < m; r0 += kRowsPerPass) {
      const int rows = static_cast<int>(m - r0 < kRowsPerPass ? m - r0 : kRowsPerPass);
      DotRows(in + r0 * k, weight + col * k, k, rows, out + r0 * n + col, n);
    }
  }
  return 0;
}
