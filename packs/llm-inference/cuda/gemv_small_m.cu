// Decode's small-M GEMV on a GPU, bf16: y[m, n] = sum_k x[m, k] * w[n, k] (f32 accumulation),
// x [..., k] with at most 16 rows, w [n, k] as nn.Linear keeps it, y [..., n]. The weight is the
// traffic: one warp per output column streams its weight row once with 16-byte loads (8 bf16)
// and multiplies it with every row of x (small, served from L1/L2); a shuffle reduction per row.
#include <cuda_bf16.h>

#include <cstdint>

#include "kope/kernel.h"

constexpr int kWarpsPerBlock = 4;  // kope:tune 2 4 8
constexpr int kMaxRows = 16;

namespace {

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void GemvVec(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                        __nv_bfloat16* __restrict__ y, int m, int64_t n, int64_t k) {
  const int64_t col = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (col >= n) return;
  float acc[kMaxRows] = {};
  const uint4* wr = reinterpret_cast<const uint4*>(w + col * k);
  for (int64_t v = lane; v < k / 8; v += 32) {
    uint4 wv = __ldcs(wr + v);
    const __nv_bfloat162* w2 = reinterpret_cast<const __nv_bfloat162*>(&wv);
    float wf[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(w2[j]);
      wf[2 * j] = f.x;
      wf[2 * j + 1] = f.y;
    }
#pragma unroll
    for (int r = 0; r < kMaxRows; ++r) {
      if (r < m) {
        uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + r * k) + v);
        const __nv_bfloat162* x2 = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 f = __bfloat1622float2(x2[j]);
          acc[r] += f.x * wf[2 * j] + f.y * wf[2 * j + 1];
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) {
    if (r < m) {
      const float s = WarpSum(acc[r]);
      if (lane == 0) y[r * n + col] = __float2bfloat16_rn(s);
    }
  }
}

__global__ void GemvAny(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                        __nv_bfloat16* __restrict__ y, int m, int64_t n, int64_t k) {
  const int64_t col = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (col >= n) return;
  for (int r = 0; r < m; ++r) {
    float acc = 0.0f;
    for (int64_t i = lane; i < k; i += 32) {
      acc += __bfloat162float(x[r * k + i]) * __bfloat162float(w[col * k + i]);
    }
    acc = WarpSum(acc);
    if (lane == 0) y[r * n + col] = __float2bfloat16_rn(acc);
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (x.dtype != KOPE_BF16 || w.dtype != KOPE_BF16 || y.dtype != KOPE_BF16 || w.ndim != 2) {
    return 2;
  }
  const int64_t n = w.shape[0], k = w.shape[1];
  int64_t m = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) m *= x.shape[d];
  if (x.shape[x.ndim - 1] != k || m > kMaxRows) return 3;
  const auto* xp = static_cast<const __nv_bfloat16*>(x.data);
  const auto* wp = static_cast<const __nv_bfloat16*>(w.data);
  auto* yp = static_cast<__nv_bfloat16*>(y.data);
  const bool aligned =
      (reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(wp)) % 16 == 0;
  const int64_t blocks = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (aligned && k % 8 == 0) {
    GemvVec<<<blocks, kWarpsPerBlock * 32, 0, s>>>(xp, wp, yp, static_cast<int>(m), n, k);
  } else {
    GemvAny<<<blocks, kWarpsPerBlock * 32, 0, s>>>(xp, wp, yp, static_cast<int>(m), n, k);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
