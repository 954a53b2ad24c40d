// y = 2 x, written kRepeat times over: a seed kernel whose one tunable sets how much work it
// does, so that the tuner's best value (1) is known and the effect of each step (2x) is large.
#include <cstdint>

#include "kope/kernel.h"

constexpr int kRepeat = 16;  // kope:tune 16 8 4 2 1

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (x.dtype != KOPE_F32 || y.dtype != KOPE_F32 || x.ndim != 1 || y.ndim != 1) return 2;
  if (x.shape[0] != y.shape[0]) return 3;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  for (int r = 0; r < kRepeat; ++r) {
    for (int64_t i = 0; i < x.shape[0]; ++i) out[i] = 2.0f * in[i];
    asm volatile("" : : : "memory");  // every pass is done: the compiler may not merge them
  }
  return 0;
}
