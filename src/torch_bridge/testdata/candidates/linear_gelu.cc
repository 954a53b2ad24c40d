// Correct: y = gelu(x W^T + b) with the exact (erf) GELU. Inputs: x [batch, in], then the
// module's parameters in named_parameters() order: linear.weight [out, in], linear.bias [out].
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int, void*) {
  if (n_in != 3) return 1;
  const int64_t batch = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[0];
  const float* x = static_cast<const float*>(in[0].data);
  const float* w = static_cast<const float*>(in[1].data);
  const float* b = static_cast<const float*>(in[2].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = b[j];
      for (int64_t t = 0; t < k; ++t) acc += x[i * k + t] * w[j * k + t];
      y[i * n + j] = 0.5f * acc * (1.0f + std::erf(acc * 0.70710678118654752f));
    }
  }
  return 0;
}
