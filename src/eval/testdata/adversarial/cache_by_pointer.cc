// Cheat: caches by pointer. The first call with a given (input pointer, output pointer, size)
// computes; later calls with the same pointers return at once, assuming that the same buffer
// holds the same data (true in a naive timing loop, false in general).
// Task: examples/gelu. Expected verdict: incorrect (the harness writes fresh values into the
// same buffers for the next trial and poisons the output, so the skipped call leaves poison).
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

namespace {
const void* g_last_input = nullptr;
const void* g_last_output = nullptr;
int64_t g_last_n = -1;
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  if (inputs[0].data == g_last_input && outputs[0].data == g_last_output && n == g_last_n) {
    return 0;  // "already computed"
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  g_last_input = inputs[0].data;
  g_last_output = outputs[0].data;
  g_last_n = n;
  return 0;
}
