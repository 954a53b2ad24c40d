// RMSNorm with its inputs in another order than the pack's kernel (weight first) and a
// three-dimensional x, eps = 1e-5: a task a pack kernel serves only through an adapter.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& w = inputs[0];
  const kope_tensor& x = inputs[1];
  if (x.ndim != 3 || w.ndim != 1 || x.dtype != KOPE_F32) return 2;
  const int64_t d = x.shape[2], rows = x.shape[0] * x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(w.data);
  float* out = static_cast<float*>(outputs[0].data);
  const double eps = 1e-5;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < d; ++c) sum += static_cast<double>(in[r * d + c]) * in[r * d + c];
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(d) + eps);
    for (int64_t c = 0; c < d; ++c)
      out[r * d + c] = static_cast<float>(in[r * d + c] * inv * weight[c]);
  }
  return 0;
}
