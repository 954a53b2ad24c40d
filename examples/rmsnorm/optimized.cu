// RMSNorm at the memory bandwidth: x read once, y written once (w, 16 KiB, stays in L2).
//
// One block of 256 threads per row. Rows of at most 4096 elements (a multiple of 4, 16-byte
// aligned) stay in registers: up to four 16-byte loads per thread in flight together, a block
// sum of squares (f32 per thread, a shuffle and shared-memory tree across threads), then
// x * (w * inv_rms) with streaming stores. Other rows read x twice (a second pass to write).
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kThreads = 256;
constexpr int kVectors = 4;

bool IsContiguousF32(const kope_tensor& t, int ndim) {
  if (t.dtype != KOPE_F32 || t.ndim != ndim) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

__device__ __forceinline__ float BlockSum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? scratch[lane] : 0.f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}

__global__ void __launch_bounds__(kThreads)
    RmsNormRegisters(const float4* __restrict__ x, const float4* __restrict__ w,
                     float4* __restrict__ y, int n4, float inv_cols) {
  __shared__ float scratch[kThreads / 32];
  const float4* in = x + static_cast<int64_t>(blockIdx.x) * n4;
  float4* out = y + static_cast<int64_t>(blockIdx.x) * n4;
  float4 v[kVectors];
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < n4) {
      v[k] = __ldcs(in + i);
      ss += (v[k].x * v[k].x + v[k].y * v[k].y) + (v[k].z * v[k].z + v[k].w * v[k].w);
    }
  }
  const float inv = rsqrtf(BlockSum(ss, scratch) * inv_cols + 1e-6f);
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < n4) {
      const float4 g = __ldg(w + i);
      __stcs(out + i, make_float4(v[k].x * (g.x * inv), v[k].y * (g.y * inv), v[k].z * (g.z * inv),
                                  v[k].w * (g.w * inv)));
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    RmsNormTwoPass(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                   int64_t cols) {
  __shared__ float scratch[kThreads / 32];
  const float* in = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  float ss = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) ss += in[c] * in[c];
  const float inv = rsqrtf(BlockSum(ss, scratch) / static_cast<float>(cols) + 1e-6f);
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) out[c] = in[c] * (w[c] * inv);
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (!IsContiguousF32(inputs[0], 2) || !IsContiguousF32(inputs[1], 1) ||
      !IsContiguousF32(outputs[0], 2)) {
    return 2;
  }
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (inputs[1].shape[0] != cols || outputs[0].shape[0] != rows || outputs[0].shape[1] != cols) {
    return 3;
  }
  if (rows > 2147483647LL) return 5;
  const auto* x = static_cast<const float*>(inputs[0].data);
  const auto* w = static_cast<const float*>(inputs[1].data);
  auto* y = static_cast<float*>(outputs[0].data);
  auto s = static_cast<cudaStream_t>(stream);
  const bool aligned = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) |
                        reinterpret_cast<uintptr_t>(y)) %
                           16 ==
                       0;
  if (aligned && cols % 4 == 0 && cols <= 4LL * kThreads * kVectors) {
    RmsNormRegisters<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(w),
        reinterpret_cast<float4*>(y), static_cast<int>(cols / 4), 1.0f / static_cast<float>(cols));
  } else {
    RmsNormTwoPass<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, w, y, cols);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
