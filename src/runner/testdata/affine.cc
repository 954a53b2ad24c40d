// y[i] = a * x[i] + b for a 1-D f32 x (any stride) and params = {a, b}.
#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1 || stream != nullptr) return 1;
  const kope_tensor& x = inputs[0];
  const float* p = static_cast<const float*>(inputs[1].data);
  kope_tensor& y = outputs[0];
  if (x.ndim != 1 || y.ndim != 1 || x.shape[0] != y.shape[0]) return 2;
  const float* xs = static_cast<const float*>(x.data);
  float* ys = static_cast<float*>(y.data);
  for (int64_t i = 0; i < x.shape[0]; ++i)
    ys[i * y.strides[0]] = p[0] * xs[i * x.strides[0]] + p[1];
  return 0;
}
