// GELU (tanh form), a seed for kope's tuner (docs/WORKFLOW.md): the structure is fixed, the
// numbers after `kope:tune` are swept. kExpMode picks how tanh is evaluated: 0 std::tanh per
// element (as the baseline), 1 the identity 0.5 x (1 + tanh u) = x / (1 + exp(-2u)) with
// std::exp, 2 the same with a polynomial exp the compiler vectorizes. Blocks of kBlock elements
// are shared among kThreads OpenMP threads.

// The clamps in PolyExp are selects only if floating-point compares may be assumed not to trap;
// without this GCC keeps them as branches and the loops calling PolyExp stay scalar. It must
// come before the includes, so that the inline functions from the headers agree with it.
#pragma GCC optimize("no-trapping-math")

#include <bit>
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr int kExpMode = 0;   // kope:tune 0 1 2
constexpr int kThreads = 1;   // kope:tune 1 2 4
constexpr int kBlock = 4096;  // kope:tune 1024 4096 16384

namespace {

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim < 0 || t.ndim > KOPE_MAX_DIMS) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

int64_t NumElements(const kope_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
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

void GeluBlock(const float* in, float* out, int64_t count) {
  const float k = 0.7978845608028654f;
  if (kExpMode == 0) {
    for (int64_t i = 0; i < count; ++i) {
      const float v = in[i];
      out[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    }
  } else if (kExpMode == 1) {
    for (int64_t i = 0; i < count; ++i) {
      const float v = in[i];
      out[i] = v / (1.0f + std::exp(-2.0f * k * (v + 0.044715f * v * v * v)));
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) {
      const float v = in[i];
      out[i] = v / (1.0f + PolyExp(-2.0f * k * (v + 0.044715f * v * v * v)));
    }
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (!IsContiguousF32(x) || !IsContiguousF32(y)) return 2;
  const int64_t n = NumElements(x);
  if (NumElements(y) != n) return 3;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(kThreads) schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * kBlock;
    GeluBlock(in + begin, out + begin, n - begin < kBlock ? n - begin : kBlock);
  }
  return 0;
}
