// Row-wise softmax, a seed for kope's tuner (docs/WORKFLOW.md): three passes per row (max,
// exp and sum, scale); kExpMode 0 calls std::exp, 1 a polynomial exp the compiler vectorizes;
// rows are shared among kThreads OpenMP threads.

// The clamps in PolyExp are selects only if floating-point compares may be assumed not to trap;
// without this GCC keeps them as branches and the loops calling PolyExp stay scalar. It must
// come before the includes, so that the inline functions from the headers agree with it.
#pragma GCC optimize("no-trapping-math")

#include <bit>
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr int kExpMode = 0;  // kope:tune 0 1
constexpr int kThreads = 1;  // kope:tune 1 2 4

namespace {

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 2) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// exp(x) for f32 (Cephes' range reduction and degree-6 polynomial), branch-free so that a loop
// calling it vectorizes; saturates to 0 below -87.3 and to infinity above 88.7.
inline float PolyExp(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.7f ? 88.7f : x;
  const float t = x * 1.44269504088896341f + 0.5f;
  const int32_t ti = static_cast<int32_t>(t);
  const int32_t n = ti - (static_cast<float>(ti) > t ? 1 : 0);  // floor(t)
  const float nf = static_cast<float>(n);
  const float r = x - nf * 0.693359375f + nf * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * std::bit_cast<float>((n + 127) << 23);
}

void SoftmaxRow(const float* x, float* y, int64_t cols) {
  float max = x[0];
#pragma omp simd reduction(max : max)
  for (int64_t c = 1; c < cols; ++c) max = x[c] > max ? x[c] : max;
  float sum = 0.0f;
  if (kExpMode == 0) {
    for (int64_t c = 0; c < cols; ++c) {
      y[c] = std::exp(x[c] - max);
      sum += y[c];
    }
  } else {
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < cols; ++c) {
      y[c] = PolyExp(x[c] - max);
      sum += y[c];
    }
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (!IsContiguousF32(x) || !IsContiguousF32(y)) return 2;
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1]) return 3;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for num_threads(kThreads) schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow(in + r * cols, out + r * cols, cols);
  return 0;
}
