// LayerNorm (eps = 1e-5) in double, one row at a time.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0], d = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  const float* b = static_cast<const float*>(inputs[2].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < d; ++c) mean += xr[c];
    mean /= static_cast<double>(d);
    for (int64_t c = 0; c < d; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(d) + 1e-5);
    for (int64_t c = 0; c < d; ++c)
      y[r * d + c] = static_cast<float>((xr[c] - mean) * inv * w[c] + b[c]);
  }
  return 0;
}
