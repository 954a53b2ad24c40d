// RMSNorm over the last dimension on a GPU, f32 / f16 / bf16 (x, weight and y of one dtype):
// y = x / sqrt(mean(x^2) + eps) * weight, x and y [..., d], weight [d]; sums in f32. As
// transformers' RMSNorm rounds: the normalized row is rounded to the input's dtype before the
// weight multiplies it (a second rounding), so that inside a model the kernel gives the
// module's own values, not merely values within the tolerance.
// One block of kThreads per row; when d is a multiple of 8 elements (16 bytes of bf16) the row is
// read with 16-byte loads, once, into registers (rows up to kThreads * kVectors * 16 bytes),
// otherwise element by element in two passes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kope/kernel.h"

constexpr float kEps = 1e-6f;  // kope:attr eps
constexpr int kThreads = 256;  // kope:tune 128 256 512
constexpr int kVectors = 4;

namespace {

__device__ __forceinline__ float ToF(float v) { return v; }
__device__ __forceinline__ float ToF(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToF(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T FromF(float v);
template <>
__device__ __forceinline__ float FromF<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromF<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float scratch[32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? scratch[lane] : 0.0f;
  if (warp == 0) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}

// weight * (x * inv rounded to T), rounded to T.
template <typename T>
__device__ __forceinline__ T Scaled(T x, float inv, T w) {
  return FromF<T>(ToF(FromF<T>(ToF(x) * inv)) * ToF(w));
}

// 16-byte vectors held in registers.
template <typename T>
__global__ void RmsNormVec(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                           int64_t d) {
  constexpr int kPer = 16 / sizeof(T);
  const int64_t vecs = d / kPer;
  const uint4* xr = reinterpret_cast<const uint4*>(x + blockIdx.x * d);
  uint4 held[kVectors];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const int64_t i = threadIdx.x + k * kThreads;
    if (i < vecs) {
      held[k] = __ldg(xr + i);
      const T* e = reinterpret_cast<const T*>(&held[k]);
#pragma unroll
      for (int j = 0; j < kPer; ++j) sum += ToF(e[j]) * ToF(e[j]);
    }
  }
  const float inv = rsqrtf(BlockSum(sum) / static_cast<float>(d) + kEps);
  uint4* yr = reinterpret_cast<uint4*>(y + blockIdx.x * d);
  const uint4* wr = reinterpret_cast<const uint4*>(w);
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const int64_t i = threadIdx.x + k * kThreads;
    if (i < vecs) {
      uint4 wv = __ldg(wr + i), out;
      const T* e = reinterpret_cast<const T*>(&held[k]);
      const T* we = reinterpret_cast<const T*>(&wv);
      T* o = reinterpret_cast<T*>(&out);
#pragma unroll
      for (int j = 0; j < kPer; ++j) o[j] = Scaled(e[j], inv, we[j]);
      __stcs(yr + i, out);
    }
  }
}

template <typename T>
__global__ void RmsNormAny(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                           int64_t d) {
  const T* xr = x + blockIdx.x * d;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) sum += ToF(xr[i]) * ToF(xr[i]);
  const float inv = rsqrtf(BlockSum(sum) / static_cast<float>(d) + kEps);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    y[blockIdx.x * d + i] = Scaled(xr[i], inv, w[i]);
  }
}

template <typename T>
int Launch(const kope_tensor& x, const kope_tensor& w, kope_tensor& y, cudaStream_t stream) {
  const int64_t d = w.shape[0];
  int64_t rows = 1;
  for (int k = 0; k + 1 < x.ndim; ++k) rows *= x.shape[k];
  constexpr int64_t kPer = 16 / sizeof(T);
  const bool aligned = (reinterpret_cast<uintptr_t>(x.data) | reinterpret_cast<uintptr_t>(w.data) |
                        reinterpret_cast<uintptr_t>(y.data)) %
                           16 ==
                       0;
  const T* xp = static_cast<const T*>(x.data);
  const T* wp = static_cast<const T*>(w.data);
  T* yp = static_cast<T*>(y.data);
  if (rows == 0) return 0;
  if (aligned && d % kPer == 0 && d / kPer <= int64_t{kThreads} * kVectors) {
    RmsNormVec<T><<<rows, kThreads, 0, stream>>>(xp, wp, yp, d);
  } else {
    RmsNormAny<T><<<rows, kThreads, 0, stream>>>(xp, wp, yp, d);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (w.ndim != 1 || x.shape[x.ndim - 1] != w.shape[0] || x.dtype != w.dtype ||
      y.dtype != x.dtype) {
    return 2;
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (x.dtype) {
    case KOPE_F32:
      return Launch<float>(x, w, y, s);
    case KOPE_F16:
      return Launch<__half>(x, w, y, s);
    case KOPE_BF16:
      return Launch<__nv_bfloat16>(x, w, y, s);
    default:
      return 2;
  }
}
