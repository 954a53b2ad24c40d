// Softmax over the last dimension in double, three passes per row, one thread.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const int64_t n = x.shape[x.ndim - 1];
  int64_t total = 1;
  for (int d = 0; d < x.ndim; ++d) total *= x.shape[d];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < total / n; ++r) {
    const float* xr = in + r * n;
    double m = xr[0];
    for (int64_t c = 1; c < n; ++c) m = xr[c] > m ? xr[c] : m;
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += std::exp(xr[c] - m);
    for (int64_t c = 0; c < n; ++c) out[r * n + c] = static_cast<float>(std::exp(xr[c] - m) / sum);
  }
  return 0;
}
