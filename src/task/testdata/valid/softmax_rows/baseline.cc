// Row-wise softmax, the plain way: y = exp(x - max) / sum(exp(x - max)).
#include <cmath>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  (void)stream;
  if (n_inputs < 1 || n_outputs < 2) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  for (int64_t r = 0; r < x.shape[0]; ++r) {
    const float* row = in + r * x.strides[0];
    float* dst = out + r * y.strides[0];
    float max = row[0];
    for (int64_t c = 1; c < x.shape[1]; ++c) max = std::fmax(max, row[c * x.strides[1]]);
    static_cast<double*>(outputs[1].data)[r * outputs[1].strides[0]] = max;
    double sum = 0;
    for (int64_t c = 0; c < x.shape[1]; ++c) sum += std::exp(row[c * x.strides[1]] - max);
    for (int64_t c = 0; c < x.shape[1]; ++c) {
      dst[c * y.strides[1]] = static_cast<float>(std::exp(row[c * x.strides[1]] - max) / sum);
    }
  }
  return 0;
}
