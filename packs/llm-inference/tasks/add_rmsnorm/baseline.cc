// Residual add, then RMSNorm (eps = 1e-6) in double, one row at a time: the unfused pair.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 2) return 1;
  const int64_t rows = inputs[0].shape[0], d = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* res = static_cast<const float*>(inputs[1].data);
  const float* w = static_cast<const float*>(inputs[2].data);
  float* y = static_cast<float*>(outputs[0].data);
  float* h = static_cast<float*>(outputs[1].data);
  for (int64_t i = 0; i < rows * d; ++i) h[i] = x[i] + res[i];
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < d; ++c) sum += static_cast<double>(h[r * d + c]) * h[r * d + c];
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(d) + 1e-6);
    for (int64_t c = 0; c < d; ++c) y[r * d + c] = static_cast<float>(h[r * d + c] * inv * w[c]);
  }
  return 0;
}
