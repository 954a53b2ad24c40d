// y = x @ w^T one output at a time, summed in double: the naive decode GEMV.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[0];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += static_cast<double>(x[r * k + i]) * w[c * k + i];
      y[r * n + c] = static_cast<float>(sum);
    }
  }
  return 0;
}
