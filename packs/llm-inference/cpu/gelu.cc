// Elementwise GELU (erf form, torch.nn.functional.gelu's default), f32, any shape:
// y = 0.5 x (1 + erf(x / sqrt(2))). Blocks of kBlock elements shared among OpenMP threads.
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr int64_t kBlock = 8192;  // kope:tune 2048 8192 32768

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (inputs[0].dtype != KOPE_F32 || outputs[0].dtype != KOPE_F32) return 2;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = b * kBlock + kBlock < n ? b * kBlock + kBlock : n;
#pragma omp simd
    for (int64_t i = b * kBlock; i < end; ++i) {
      y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
    }
  }
  return 0;
}
