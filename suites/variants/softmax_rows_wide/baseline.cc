// Row softmax, three passes per row (max, sum of exponentials, divide): the code to beat and
// the reference. Accumulates the sum in double.
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
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (x.ndim != 2 || y.ndim != 2 || !IsContiguousF32(x) || !IsContiguousF32(y)) return 2;
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1]) return 3;

  const int64_t rows = x.shape[0], cols = x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * cols;
    float* yr = out + r * cols;
    float max = xr[0];
    for (int64_t c = 1; c < cols; ++c) max = std::fmax(max, xr[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      yr[c] = std::exp(xr[c] - max);
      sum += yr[c];
    }
    for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<float>(yr[c] / sum);
  }
  return 0;
}
