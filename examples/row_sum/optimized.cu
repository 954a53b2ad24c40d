// Row sums at the memory bandwidth.
//
// One block of 256 threads per row (a grid-stride loop over rows when there are more rows than
// resident blocks would need): 16-byte loads, four in flight per thread, f32 partial sums per
// thread (each thread adds cols/1024 values, well inside the tolerance), a warp-shuffle and a
// shared-memory reduction. Rows whose start is not 16-byte aligned (cols % 4 != 0) use scalar
// loads.
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kThreads = 256;

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

__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float partial[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? partial[lane] : 0.f;
  if (warp == 0) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  __syncthreads();  // partial[] is reused by the next row
  return v;
}

__global__ void __launch_bounds__(kThreads)
    RowSum(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols,
           bool vector) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + r * cols;
    float s = 0.f;
    if (vector) {
      const float4* row4 = reinterpret_cast<const float4*>(row);
      const int64_t n4 = cols / 4;
      int64_t i = threadIdx.x;
      for (; i + 3 * kThreads < n4; i += 4 * kThreads) {
        const float4 a = __ldcs(row4 + i), b = __ldcs(row4 + i + kThreads);
        const float4 c = __ldcs(row4 + i + 2 * kThreads), d = __ldcs(row4 + i + 3 * kThreads);
        s += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w)) +
             ((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w));
      }
      for (; i < n4; i += kThreads) {
        const float4 a = __ldcs(row4 + i);
        s += (a.x + a.y) + (a.z + a.w);
      }
      for (int64_t c = 4 * n4 + threadIdx.x; c < cols; c += kThreads) s += row[c];
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += row[c];
    }
    s = BlockSum(s);
    if (threadIdx.x == 0) y[r] = s;
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (!IsContiguousF32(inputs[0], 2) || !IsContiguousF32(outputs[0], 1)) return 2;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (outputs[0].shape[0] != rows) return 3;
  const auto* x = static_cast<const float*>(inputs[0].data);
  const bool vector = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  int sms = 0, device = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int64_t blocks = rows < 8LL * sms ? rows : 8LL * sms;
  RowSum<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, static_cast<float*>(outputs[0].data), rows, cols, vector);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
