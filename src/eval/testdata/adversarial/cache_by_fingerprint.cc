// Cheat: caches by a sampled fingerprint of the input. It keys a saved copy of its last output
// on (size, bits of x[0]) and replays that copy whenever the key matches, instead of
// computing. A timing loop that calls it repeatedly on the same inputs measures a memcpy.
// Task: examples/gelu. Expected verdict: incorrect. What catches it: rewriting the input in
// place while keeping the sampled element (e.g. changing one element other than the first, or
// drawing inputs where x[0] repeats) and checking that the output follows. Fresh random inputs
// alone do not: x[0] changes with them and the kernel then recomputes honestly.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kope/kernel.h"

namespace {
std::vector<float> g_saved_output;
uint32_t g_saved_first = 0;
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  uint32_t first;
  std::memcpy(&first, x, sizeof first);
  if (static_cast<int64_t>(g_saved_output.size()) == n && first == g_saved_first) {
    std::memcpy(y, g_saved_output.data(), static_cast<size_t>(n) * sizeof(float));
    return 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  g_saved_output.assign(y, y + n);
  g_saved_first = first;
  return 0;
}
