// Correct: a native candidate gets the number as a one-element f64 tensor.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int, void*) {
  if (n_in != 2 || in[1].dtype != KOPE_F64) return 1;
  const double s = *static_cast<const double*>(in[1].data);
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = static_cast<float>(x[i] * s);
  return 0;
}
