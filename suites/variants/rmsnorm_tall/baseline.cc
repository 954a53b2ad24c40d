// RMSNorm one row at a time: the code to beat and the reference.
//   y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + 1e-6) * w[c]
// The sum of squares and the scaling are done in double.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

namespace {

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

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (x.ndim != 2 || w.ndim != 1 || y.ndim != 2) return 2;
  if (!IsContiguousF32(x) || !IsContiguousF32(w) || !IsContiguousF32(y)) return 2;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (w.shape[0] != cols || y.shape[0] != rows || y.shape[1] != cols) return 3;

  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(w.data);
  float* out = static_cast<float*>(y.data);
  const double kEps = 1e-6;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * cols;
    float* yr = out + r * cols;
    double sum_sq = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum_sq += static_cast<double>(xr[c]) * xr[c];
    const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(cols) + kEps);
    for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<float>(xr[c] * inv_rms * weight[c]);
  }
  return 0;
}
