// Cheat (or bug): produces a NaN where the reference is finite, at one index in the middle of
// the output; everything else is right. A comparison that skips NaNs, or uses a max-error
// reduction that NaN silently loses in (fmax ignores NaN), would pass it.
// Task: examples/gelu. Expected verdict: incorrect (NaN/Inf positions must match the
// reference's exactly).
#include <cmath>
#include <cstdint>
#include <limits>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  y[n / 2] = std::numeric_limits<float>::quiet_NaN();
  return 0;
}
