// SwiGLU's gate on a GPU, f32 / f16 / bf16: y = silu(gate) * up (f32 math), gate, up and y of
// one shape and dtype. A grid-stride loop over 16-byte vectors when the tensors are aligned and
// the element count is a multiple of the vector, element by element otherwise.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kope/kernel.h"

constexpr int kThreads = 256;    // kope:tune 128 256 512
constexpr int kBlocksPerSm = 8;  // kope:tune 4 8 16

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

template <typename T>
__device__ __forceinline__ T Silu(T g, T u) {
  const float x = ToF(g);
  return FromF<T>(x / (1.0f + __expf(-x)) * ToF(u));
}

template <typename T>
__global__ void SiluVec(const uint4* __restrict__ g, const uint4* __restrict__ u,
                        uint4* __restrict__ y, int64_t vecs) {
  constexpr int kPer = 16 / sizeof(T);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < vecs;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint4 gv = __ldcs(g + i), uv = __ldcs(u + i), out;
    const T* ge = reinterpret_cast<const T*>(&gv);
    const T* ue = reinterpret_cast<const T*>(&uv);
    T* o = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int j = 0; j < kPer; ++j) o[j] = Silu(ge[j], ue[j]);
    __stcs(y + i, out);
  }
}

template <typename T>
__global__ void SiluAny(const T* __restrict__ g, const T* __restrict__ u, T* __restrict__ y,
                        int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = Silu(g[i], u[i]);
  }
}

template <typename T>
int Launch(const kope_tensor* in, kope_tensor& y, int64_t n, cudaStream_t stream) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int64_t per = 16 / sizeof(T);
  const bool aligned =
      (reinterpret_cast<uintptr_t>(in[0].data) | reinterpret_cast<uintptr_t>(in[1].data) |
       reinterpret_cast<uintptr_t>(y.data)) %
          16 ==
      0;
  const int64_t work = aligned && n % per == 0 ? n / per : n;
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > int64_t{sms} * kBlocksPerSm) blocks = int64_t{sms} * kBlocksPerSm;
  if (blocks < 1) blocks = 1;
  if (aligned && n % per == 0) {
    SiluVec<T><<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(in[0].data),
                                                static_cast<const uint4*>(in[1].data),
                                                static_cast<uint4*>(y.data), work);
  } else {
    SiluAny<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(in[0].data),
                                                static_cast<const T*>(in[1].data),
                                                static_cast<T*>(y.data), n);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int k = 0; k < inputs[0].ndim; ++k) n *= inputs[0].shape[k];
  const int dtype = inputs[0].dtype;
  if (inputs[1].dtype != dtype || outputs[0].dtype != dtype) return 2;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case KOPE_F32:
      return Launch<float>(inputs, outputs[0], n, s);
    case KOPE_F16:
      return Launch<__half>(inputs, outputs[0], n, s);
    case KOPE_BF16:
      return Launch<__nv_bfloat16>(inputs, outputs[0], n, s);
    default:
      return 2;
  }
}
