// Cheat (or bug): computes the output correctly, then writes 4 elements past its end, as a
// vector loop without a tail mask would. In a shared arena the bytes after an output usually
// belong to the next buffer, so nothing crashes and the damage is silent.
// Task: examples/gelu. Expected verdict: incorrect. The harness places poisoned guard bytes
// after every output and checks them after each call; 16 bytes past the end land in that
// guard (not on an unmapped page), so it is caught as a guard overwrite rather than a crash.
#include <cmath>
#include <cstdint>

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
  for (int64_t i = n; i < n + 4; ++i) y[i] = 0.0f;  // past the end
  return 0;
}
