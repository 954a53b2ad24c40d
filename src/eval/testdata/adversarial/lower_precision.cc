// Cheat: silently computes in lower precision. The input is rounded to bfloat16 (8 bits of
// mantissa, by bit manipulation: round to nearest even on the top 16 bits), gelu is computed,
// and the result is rounded to bfloat16 again: the arithmetic a bf16 kernel would do on an f32
// task, relative errors up to about 4e-3.
// Task: examples/gelu (f32, rtol 1e-5). Expected verdict: incorrect.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kope/kernel.h"

namespace {
float RoundToBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  bits &= 0xFFFF0000u;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = RoundToBf16(x[i]);
    y[i] = RoundToBf16(0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))));
  }
  return 0;
}
