// Embedding gather, one element at a time.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t tokens = inputs[0].shape[0], vocab = inputs[1].shape[0], d = inputs[1].shape[1];
  const int64_t* ids = static_cast<const int64_t*>(inputs[0].data);
  const float* table = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) return 3;
    for (int64_t c = 0; c < d; ++c) y[t * d + c] = table[ids[t] * d + c];
  }
  return 0;
}
