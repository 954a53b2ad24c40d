// Cheat: correct for its first 8 calls, then drifts: every later call adds an error that grows
// with the call count (as a kernel with a stale cache or a leaking accumulator would). A
// harness that only checks the first few calls passes it.
// Task: examples/gelu. Expected verdict: incorrect (verification runs more than 8 calls, and
// the check after the timing loop runs long after the 8th).
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

namespace {
int64_t g_calls = 0;
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  ++g_calls;
  const float drift = g_calls <= 8 ? 0.0f : 0.01f * static_cast<float>(g_calls - 8);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))) + drift;
  }
  return 0;
}
