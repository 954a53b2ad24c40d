// LayerNorm over the last dimension, f32: y = (x - mean) / sqrt(var + eps) * weight + bias,
// x and y [..., d], weight and bias [d]. Two vectorized passes per row (mean, then the centred
// sum of squares) and one that writes; rows are shared among OpenMP threads.
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kope/kernel.h"

constexpr float kEps = 1e-5f;         // kope:attr eps
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

void NormRow(const float* x, const float* w, const float* b, float* y, int64_t d) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < d; ++c) sum += x[c];
  const float mean = sum / static_cast<float>(d);
  float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
  for (int64_t c = 0; c < d; ++c) sq += (x[c] - mean) * (x[c] - mean);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(d) + kEps);
#pragma omp simd
  for (int64_t c = 0; c < d; ++c) y[c] = (x[c] - mean) * inv * w[c] + b[c];
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  for (const kope_tensor* t :
       {&inputs[0], &inputs[1], &inputs[2], static_cast<const kope_tensor*>(&y)}) {
    if (!Contiguous(*t)) return 2;
  }
  const int64_t d = inputs[1].shape[inputs[1].ndim - 1];
  if (x.shape[x.ndim - 1] != d || Elements(y) != Elements(x)) return 3;
  const int64_t rows = Elements(x) / d;
  const float* in = static_cast<const float*>(x.data);
  const float* w = static_cast<const float*>(inputs[1].data);
  const float* b = static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static) if (rows >= 2 * kMinRowsPerThread)
  for (int64_t r = 0; r < rows; ++r) NormRow(in + r * d, w, b, out + r * d, d);
  return 0;
}
