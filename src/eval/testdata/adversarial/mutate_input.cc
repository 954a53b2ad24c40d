// Cheat: computes the right output but also writes into its input (here: the sign of the last
// input element is flipped after use, as a kernel that borrows its input as scratch would).
// Inputs are read-only by contract; a kernel that changes them corrupts whatever reads them
// next (a fused graph, the reference, the next timed call).
// Task: examples/gelu. Expected verdict: incorrect (inputs are hashed before and after each
// call; the output itself is right).
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  float* x = static_cast<float*>(inputs[0].data);  // const dropped on purpose
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  // -v != v for every v != 0, and the drawn inputs are never 0.
  x[n - 1] = -x[n - 1];
  return 0;
}
