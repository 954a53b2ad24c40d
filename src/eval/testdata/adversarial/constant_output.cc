// Cheat: fills the output with a constant (0), which matches a degenerate reference (one whose
// inputs are all zeros or all very negative, where gelu is 0).
// Task: examples/gelu. Expected verdict: incorrect (inputs are never zeros or constants, so
// the reference is never constant).
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < outputs[0].ndim; ++d) n *= outputs[0].shape[d];
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
  return 0;
}
