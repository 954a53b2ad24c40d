// SwiGLU's gate, one element at a time in double: y = gate / (1 + exp(-gate)) * up.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* gate = static_cast<const float*>(inputs[0].data);
  const float* up = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
  return 0;
}
