// y = p(x) where p is a damped polynomial iterated many times: compute-bound,
// scalar, about 10 ms per call for n = 65536 on one core of a 2-core Xeon VM.
#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  const int64_t n = in[0].shape[0];
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float acc = 0;
    for (int r = 0; r < 140; ++r) {
      acc = acc * 0.5f + v;
      v = v * 0.999f;
    }
    y[i] = acc;
  }
  return 0;
}
