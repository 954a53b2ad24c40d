// Interleaved rotary embedding, pair by pair in double.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const int64_t tokens = x.shape[0], heads = x.shape[1], d = x.shape[2], half = d / 2;
  const float* in = static_cast<const float*>(x.data);
  const float* cos = static_cast<const float*>(inputs[1].data);
  const float* sin = static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t at = (t * heads + h) * d + 2 * i;
        const double a = in[at], b = in[at + 1], c = cos[t * half + i], s = sin[t * half + i];
        out[at] = static_cast<float>(a * c - b * s);
        out[at + 1] = static_cast<float>(a * s + b * c);
      }
    }
  }
  return 0;
}
