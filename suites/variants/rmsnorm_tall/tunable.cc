// RMSNorm, a seed for kope's tuner (docs/WORKFLOW.md): the sum of squares of a row is kept in
// kLanes independent partial sums (1: one dependent chain of adds; more: the compiler
// vectorizes), then every element is scaled by w * inv_rms; rows are shared among kThreads
// OpenMP threads.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr int kLanes = 1;    // kope:tune 1 4 16 64
constexpr int kThreads = 1;  // kope:tune 1 2 4

namespace {

bool IsContiguousF32(const kope_tensor& t, int ndim) {
  if (t.dtype != KOPE_F32 || t.ndim != ndim) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

float SumOfSquares(const float* x, int64_t cols) {
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += x[c + l] * x[c + l];
  }
  for (int l = 0; c < cols; ++c, ++l) lanes[l] += x[c] * x[c];
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (!IsContiguousF32(x, 2) || !IsContiguousF32(w, 1) || !IsContiguousF32(y, 2)) return 2;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (w.shape[0] != cols || y.shape[0] != rows || y.shape[1] != cols) return 3;
  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(w.data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for num_threads(kThreads) schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * cols;
    float* yr = out + r * cols;
    const float inv_rms =
        1.0f / std::sqrt(SumOfSquares(xr, cols) / static_cast<float>(cols) + 1e-6f);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * inv_rms * weight[c];
  }
  return 0;
}
