// y = -x over a 1-D tensor.
#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  (void)stream;
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < inputs[0].shape[0]; ++i) {
    y[i * outputs[0].strides[0]] = -x[i * inputs[0].strides[0]];
  }
  return 0;
}
