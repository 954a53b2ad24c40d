// Row-wise softmax at the memory bandwidth: every element read once and written once.
//
// One block of 256 threads per row. When the row fits in registers (cols <= 4096, a multiple
// of 4, 16-byte aligned) each thread loads up to four 16-byte vectors, all loads in flight
// together; a block max, exp(x - max) in place, a block sum, one multiply by 1/sum, and
// streaming stores. Other rows take a two-pass kernel (an online max and rescaled sum, then
// the write), which reads the row twice.
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kThreads = 256;
constexpr int kVectors = 4;  // float4 per thread: rows up to 4096 stay in registers

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 2) return false;
  return t.shape[0] >= 1 && t.shape[1] >= 1 && (t.shape[1] == 1 || t.strides[1] == 1) &&
         (t.shape[0] == 1 || t.strides[0] == t.shape[1]);
}

template <bool kMax>
__device__ __forceinline__ float BlockReduce(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? scratch[lane] : (kMax ? -INFINITY : 0.f);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  __syncthreads();  // scratch is reused by the next reduction
  return v;
}

__global__ void __launch_bounds__(kThreads)
    SoftmaxRegisters(const float4* __restrict__ x, float4* __restrict__ y, int n4) {
  __shared__ float scratch[kThreads / 32];
  const float4* in = x + static_cast<int64_t>(blockIdx.x) * n4;
  float4* out = y + static_cast<int64_t>(blockIdx.x) * n4;
  float4 v[kVectors];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < n4) {
      v[k] = __ldcs(in + i);
      m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
  }
  m = BlockReduce<true>(m, scratch);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    if (threadIdx.x + k * kThreads < n4) {
      v[k].x = __expf(v[k].x - m);
      v[k].y = __expf(v[k].y - m);
      v[k].z = __expf(v[k].z - m);
      v[k].w = __expf(v[k].w - m);
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
  }
  const float inv = 1.0f / BlockReduce<false>(s, scratch);
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < n4) {
      __stcs(out + i, make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv));
    }
  }
}

// Any row: pass 1 keeps a running max and a sum rescaled to it, pass 2 writes.
__global__ void __launch_bounds__(kThreads)
    SoftmaxTwoPass(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  __shared__ float scratch[kThreads / 32];
  const float* in = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  float m = -INFINITY, s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
    const float v = in[c];
    if (v > m) {
      s = s * __expf(m - v) + 1.f;
      m = v;
    } else {
      s += __expf(v - m);
    }
  }
  const float row_max = BlockReduce<true>(m, scratch);
  s = m == -INFINITY ? 0.f : s * __expf(m - row_max);
  const float inv = 1.0f / BlockReduce<false>(s, scratch);
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) out[c] = __expf(in[c] - row_max) * inv;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (!IsContiguousF32(inputs[0]) || !IsContiguousF32(outputs[0])) return 2;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (outputs[0].shape[0] != rows || outputs[0].shape[1] != cols) return 3;
  if (rows > 2147483647LL) return 5;
  const auto* x = static_cast<const float*>(inputs[0].data);
  auto* y = static_cast<float*>(outputs[0].data);
  auto s = static_cast<cudaStream_t>(stream);
  const bool aligned = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
  if (aligned && cols % 4 == 0 && cols <= 4LL * kThreads * kVectors) {
    SoftmaxRegisters<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y),
        static_cast<int>(cols / 4));
  } else {
    SoftmaxTwoPass<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, y, cols);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
