// Row softmax with an online max-and-sum pass, vectorized and threaded.
//
// Pass 1 reads a row once and keeps, per SIMD lane, a running maximum m and a running sum
// s of exp(x - m), rescaling s by exp(m_old - m_new) whenever the maximum grows (the online
// softmax of Milakov and Gimelshein). The lanes are merged at the end of the row. Pass 2
// writes exp(x - M) / S. The exponential is a Cephes-style range reduction with a degree-6
// polynomial (about 1 ulp), 16 lanes at a time with AVX-512; the tail is masked, so nothing
// past the row is read or written. Without AVX-512, scalar loops take three passes (max,
// exponentials and their sum, scale) so that each element needs one exponential.
// OpenMP splits the rows between threads.
#include <cfloat>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kope/kernel.h"

namespace {

constexpr int64_t kParallelThreshold = 1 << 15;  // elements

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
// exp(z) for z <= 88; inputs below -87 give about 1e-38 instead of a smaller value.
inline __m512 Exp16(__m512 z) {
  z = _mm512_min_ps(_mm512_max_ps(z, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(z, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), z);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

void SoftmaxRow(const float* x, float* y, int64_t cols) {
  __m512 m = _mm512_set1_ps(-FLT_MAX);
  __m512 s = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    const __m512 v = _mm512_loadu_ps(x + c);
    const __m512 m_new = _mm512_max_ps(m, v);
    s = _mm512_fmadd_ps(s, Exp16(_mm512_sub_ps(m, m_new)), Exp16(_mm512_sub_ps(v, m_new)));
    m = m_new;
  }
  const __mmask16 tail = static_cast<__mmask16>((1u << (cols - c)) - 1u);
  if (tail != 0) {  // lanes past the row keep their m and s
    const __m512 v = _mm512_mask_loadu_ps(m, tail, x + c);
    const __m512 m_new = _mm512_max_ps(m, v);
    const __m512 s_new =
        _mm512_fmadd_ps(s, Exp16(_mm512_sub_ps(m, m_new)), Exp16(_mm512_sub_ps(v, m_new)));
    s = _mm512_mask_blend_ps(tail, s, s_new);
    m = m_new;
  }
  const float row_max = _mm512_reduce_max_ps(m);
  const float row_sum =
      _mm512_reduce_add_ps(_mm512_mul_ps(s, Exp16(_mm512_sub_ps(m, _mm512_set1_ps(row_max)))));
  const __m512 vmax = _mm512_set1_ps(row_max);
  const __m512 inv = _mm512_set1_ps(1.0f / row_sum);
  c = 0;
  for (; c + 16 <= cols; c += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + c), vmax));
    _mm512_storeu_ps(y + c, _mm512_mul_ps(e, inv));
  }
  if (tail != 0) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + c), vmax));
    _mm512_mask_storeu_ps(y + c, tail, _mm512_mul_ps(e, inv));
  }
}
#else
// Without AVX-512: max, exponentials (kept in y) with their sum, then the scale; one exp each.
void SoftmaxRow(const float* x, float* y, int64_t cols) {
  float m = x[0];
  for (int64_t c = 1; c < cols; ++c) m = std::fmax(m, x[c]);
  float s = 0.0f;
  for (int64_t c = 0; c < cols; ++c) {
    y[c] = std::exp(x[c] - m);
    s += y[c];
  }
  const float inv = 1.0f / s;
  for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
}
#endif

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (x.ndim != 2 || y.ndim != 2 || !IsContiguousF32(x) || !IsContiguousF32(y)) return 2;
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1]) return 3;

  const int64_t rows = x.shape[0], cols = x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelThreshold)
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow(in + r * cols, out + r * cols, cols);
  return 0;
}
