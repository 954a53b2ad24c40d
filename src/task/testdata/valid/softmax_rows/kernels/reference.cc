// Row-wise softmax computed in double precision, as the ground truth.
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
    double max = in[r * x.strides[0]];
    for (int64_t c = 0; c < x.shape[1]; ++c) {
      max = std::fmax(max, static_cast<double>(in[r * x.strides[0] + c * x.strides[1]]));
    }
    static_cast<double*>(outputs[1].data)[r * outputs[1].strides[0]] = max;
    double sum = 0;
    for (int64_t c = 0; c < x.shape[1]; ++c) {
      sum += std::exp(in[r * x.strides[0] + c * x.strides[1]] - max);
    }
    for (int64_t c = 0; c < x.shape[1]; ++c) {
      const double e = std::exp(in[r * x.strides[0] + c * x.strides[1]] - max);
      out[r * y.strides[0] + c * y.strides[1]] = static_cast<float>(e / sum);
    }
  }
  return 0;
}
