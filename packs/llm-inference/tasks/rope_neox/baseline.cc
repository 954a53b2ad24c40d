// HF's apply_rotary_pos_emb for one tensor, element by element in double.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const int64_t b = x.shape[0], h = x.shape[1], s = x.shape[2], d = x.shape[3], half = d / 2;
  const float* in = static_cast<const float*>(x.data);
  const float* cos = static_cast<const float*>(inputs[1].data);
  const float* sin = static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < h; ++j) {
      for (int64_t t = 0; t < s; ++t) {
        for (int64_t k = 0; k < d; ++k) {
          const int64_t row = ((i * h + j) * s + t) * d, cs = (i * s + t) * d;
          const double rot = k < half ? -in[row + k + half] : in[row + k - half];
          out[row + k] = static_cast<float>(in[row + k] * static_cast<double>(cos[cs + k]) +
                                            rot * sin[cs + k]);
        }
      }
    }
  }
  return 0;
}
