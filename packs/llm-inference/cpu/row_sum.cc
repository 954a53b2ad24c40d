// Row reduction: y[...] = sum of x[..., :] over the last dimension, f32, kLanes independent
// partial sums per row (the compiler vectorizes them), rows shared among OpenMP threads.
#include <cstdint>

#include "kope/kernel.h"

constexpr int kLanes = 32;  // kope:tune 8 16 32 64

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  if (x.dtype != KOPE_F32 || outputs[0].dtype != KOPE_F32 || x.ndim < 1) return 2;
  const int64_t n = x.shape[x.ndim - 1];
  if (n > 1 && x.strides[x.ndim - 1] != 1) return 2;
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(outputs[0].data);
#pragma omp parallel for schedule(static) if (rows * n >= 65536 && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * n;
    float lanes[kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= n; c += kLanes) {
#pragma omp simd
      for (int l = 0; l < kLanes; ++l) lanes[l] += xr[c + l];
    }
    float sum = 0.0f;
    for (; c < n; ++c) sum += xr[c];
    for (int l = 0; l < kLanes; ++l) sum += lanes[l];
    out[r] = sum;
  }
  return 0;
}
