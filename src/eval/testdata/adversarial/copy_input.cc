// Cheat: returns its input as the output (y = x), the cheapest possible "kernel"; gelu(x) is
// close to x for large positive x, so a lax check on such data could pass it.
// Task: examples/gelu. Expected verdict: incorrect (gelu(x) differs from x for normal,
// negative and tied inputs).
#include <cstdint>
#include <cstring>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  std::memcpy(outputs[0].data, inputs[0].data, static_cast<size_t>(n) * sizeof(float));
  return 0;
}
