// Matrix product with an AVX-512 register-tiled micro-kernel, threaded.
//
// C is cut into tiles of 4 rows x 64 columns. A tile's 16 accumulators (4 rows x 4 vectors of
// 16) stay in registers across the whole k loop: per step, four vectors of a B row are loaded
// once and reused by four broadcast A values (16 FMAs per 8 loads), instead of the baseline's
// one multiply-add per two loads on a strided column of B. Partial tiles at the right edge use
// masked loads and stores (no access past a row); partial tiles at the bottom use a smaller
// row count chosen at compile time. OpenMP hands tiles to threads. Each element still sums
// its k terms in order, with fused multiply-adds. Without AVX-512, an i-k-j loop whose inner
// loop over j the compiler vectorizes.
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kope/kernel.h"

namespace {

constexpr int64_t kParallelThreshold = 1 << 18;  // multiply-adds

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim < 1 || t.ndim > KOPE_MAX_DIMS) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

#if defined(__AVX512F__)
constexpr int kMr = 4;
constexpr int kVectors = 4;
constexpr int kNr = 16 * kVectors;

// C[0..Mr)[0..cols) = A[0..Mr)[0..k) @ B[0..k)[0..cols), cols <= kNr.
template <int Mr>
void MicroTile(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
               int64_t k, int64_t cols) {
  __mmask16 mask[kVectors];
  for (int v = 0; v < kVectors; ++v) {
    const int64_t rest = cols - 16 * v;
    mask[v] = rest >= 16 ? static_cast<__mmask16>(0xFFFF)
              : rest > 0 ? static_cast<__mmask16>((1u << rest) - 1u)
                         : 0;
  }
  __m512 acc[Mr][kVectors];
  for (int r = 0; r < Mr; ++r)
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_maskz_loadu_ps(mask[v], b + p * ldb + 16 * v);
    for (int r = 0; r < Mr; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < Mr; ++r)
    for (int v = 0; v < kVectors; ++v)
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask[v], acc[r][v]);
}

void Matmul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  const int64_t row_tiles = (m + kMr - 1) / kMr;
  const int64_t col_tiles = (n + kNr - 1) / kNr;
#pragma omp parallel for schedule(static) if (m * n * k >= kParallelThreshold)
  for (int64_t t = 0; t < row_tiles * col_tiles; ++t) {
    const int64_t i = (t / col_tiles) * kMr;
    const int64_t j = (t % col_tiles) * kNr;
    const int64_t cols = n - j < kNr ? n - j : kNr;
    const float* at = a + i * k;
    const float* bt = b + j;
    float* ct = c + i * n + j;
    switch (m - i < kMr ? m - i : kMr) {
      case 1:
        MicroTile<1>(at, k, bt, n, ct, n, k, cols);
        break;
      case 2:
        MicroTile<2>(at, k, bt, n, ct, n, k, cols);
        break;
      case 3:
        MicroTile<3>(at, k, bt, n, ct, n, k, cols);
        break;
      default:
        MicroTile<4>(at, k, bt, n, ct, n, k, cols);
        break;
    }
  }
}
#else
void Matmul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
#pragma omp parallel for schedule(static) if (m * n * k >= kParallelThreshold)
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * n;
    for (int64_t j = 0; j < n; ++j) ci[j] = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
      const float aip = a[i * k + p];
      const float* bp = b + p * n;
      for (int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
}
#endif

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& a = inputs[0];
  const kope_tensor& b = inputs[1];
  kope_tensor& c = outputs[0];
  if (a.ndim != 2 || b.ndim != 2 || c.ndim != 2) return 2;
  if (!IsContiguousF32(a) || !IsContiguousF32(b) || !IsContiguousF32(c)) return 2;
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (b.shape[0] != k || c.shape[0] != m || c.shape[1] != n) return 3;

  Matmul(static_cast<const float*>(a.data), static_cast<const float*>(b.data),
         static_cast<float*>(c.data), m, n, k);
  return 0;
}
