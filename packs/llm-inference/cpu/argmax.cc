// Greedy decoding's argmax over a large vocabulary: idx[r] = the first index of the largest
// value of logits[r, :], f32 in, i64 out (NaN-free logits). A row is split into kChunks chunks
// scanned by OpenMP threads (one row of 128k logits is the whole work at decode), each with
// AVX-512 or AVX2 compares keeping the best value and its index per lane.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr int kChunks = 8;  // kope:tune 2 4 8 16

namespace {

struct Best {
  float value;
  int64_t index;
};

Best Better(Best a, Best b) {
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

Best ScanChunk(const float* x, int64_t begin, int64_t end) {
  Best best{-INFINITY, begin};
  int64_t c = begin;
#if defined(__AVX2__)
  if (end - begin >= 64) {
    __m256 bv = _mm256_set1_ps(-INFINITY);
    __m256i bi = _mm256_setzero_si256();
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i step = _mm256_set1_epi32(8);
    const int64_t base = c;
    for (; c + 8 <= end && c - base < (int64_t{1} << 30); c += 8) {
      const __m256 v = _mm256_loadu_ps(x + c);
      const __m256 gt = _mm256_cmp_ps(v, bv, _CMP_GT_OQ);
      bv = _mm256_blendv_ps(bv, v, gt);
      bi = _mm256_blendv_epi8(bi, idx, _mm256_castps_si256(gt));
      idx = _mm256_add_epi32(idx, step);
    }
    alignas(32) float values[8];
    alignas(32) int32_t indices[8];
    _mm256_store_ps(values, bv);
    _mm256_store_si256(reinterpret_cast<__m256i*>(indices), bi);
    for (int l = 0; l < 8; ++l) best = Better(best, {values[l], base + indices[l]});
  }
#endif
  for (; c < end; ++c) best = Better(best, {x[c], c});
  return best;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (x.dtype != KOPE_F32 || y.dtype != KOPE_I64 || x.ndim < 1) return 2;
  const int64_t n = x.shape[x.ndim - 1];
  if (x.strides[x.ndim - 1] != 1 && n > 1) return 2;
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  const float* in = static_cast<const float*>(x.data);
  int64_t* out = static_cast<int64_t*>(y.data);
  const int64_t chunk = (n + kChunks - 1) / kChunks;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * n;
    Best parts[kChunks];
#pragma omp parallel for schedule(static) if (n >= 8192)
    for (int k = 0; k < kChunks; ++k) {
      const int64_t begin = k * chunk < n ? k * chunk : n;
      const int64_t end = begin + chunk < n ? begin + chunk : n;
      parts[k] = begin < end ? ScanChunk(xr, begin, end) : Best{-INFINITY, n};
    }
    Best best = parts[0];
    for (int k = 1; k < kChunks; ++k) best = Better(best, parts[k]);
    out[r] = best.index < n ? best.index : 0;
  }
  return 0;
}
