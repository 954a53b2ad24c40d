// Correct: numerically stable softmax of each row (the last dimension).
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* in, int, kope_tensor* out, int, void*) {
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const int64_t xs = in[0].strides[0], ys = out[0].strides[0];
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * xs;
    float* yr = y + r * ys;
    float m = xr[0];
    for (int64_t c = 1; c < cols; ++c) m = std::fmax(m, xr[c]);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      yr[c] = std::exp(xr[c] - m);
      sum += yr[c];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
  }
  return 0;
}
