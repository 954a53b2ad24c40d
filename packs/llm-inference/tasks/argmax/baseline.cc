// Argmax over the last dimension, one element at a time: the first index of the largest value.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const int64_t n = x.shape[x.ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  const float* in = static_cast<const float*>(x.data);
  int64_t* out = static_cast<int64_t*>(outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < n; ++c) {
      if (in[r * n + c] > in[r * n + best]) best = c;
    }
    out[r] = best;
  }
  return 0;
}
