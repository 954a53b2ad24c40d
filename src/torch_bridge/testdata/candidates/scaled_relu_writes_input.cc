// Aliasing: computes in place on the input, then copies it to the output. The output is right,
// but the input is modified.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* in, int, kope_tensor* out, int, void*) {
  int64_t n = 1;
  for (int d = 0; d < in[0].ndim; ++d) n *= in[0].shape[d];
  float* x = static_cast<float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] * 1.5f : 0.0f;
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
  return 0;
}
