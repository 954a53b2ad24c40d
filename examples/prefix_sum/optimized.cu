// Inclusive row scan at the memory bandwidth: each element read once and written once.
//
// One block of 512 threads per row, walking the row in tiles of 512 x 8 elements with the
// tile's total carried into the next. Each thread scans its 8 consecutive elements in
// registers (two 16-byte loads where the row allows, scalar loads otherwise), a warp-shuffle
// scan combines the threads' totals, a scan of the 16 warp totals in shared memory combines the
// warps, and every thread adds its offset and stores. f32 throughout: the tree makes the error
// grow with log(cols), well inside the task's sqrt(cols) tolerance.
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kThreads = 512;
constexpr int kPerThread = 8;
constexpr int kTile = kThreads * kPerThread;

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 2) return false;
  return t.shape[0] >= 1 && t.shape[1] >= 1 && (t.shape[1] == 1 || t.strides[1] == 1) &&
         (t.shape[0] == 1 || t.strides[0] == t.shape[1]);
}

// Inclusive scan of `v` over the block; returns the thread's inclusive value, sets *total.
__device__ __forceinline__ float BlockScan(float v, float* warp_sums, float* total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float up = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += up;
  }
  if (lane == 31) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < kThreads / 32 ? warp_sums[lane] : 0.f;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float up = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += up;
    }
    if (lane < kThreads / 32) warp_sums[lane] = w;
  }
  __syncthreads();
  const float offset = warp > 0 ? warp_sums[warp - 1] : 0.f;
  *total = warp_sums[kThreads / 32 - 1];
  __syncthreads();  // warp_sums is reused by the next tile
  return v + offset;
}

template <bool kVector>
__global__ void __launch_bounds__(kThreads)
    RowScan(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  __shared__ float warp_sums[kThreads / 32];
  const float* in = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  float carry = 0.f;
  for (int64_t tile = 0; tile < cols; tile += kTile) {
    const int64_t first = tile + static_cast<int64_t>(threadIdx.x) * kPerThread;
    float v[kPerThread];
    if (kVector && first + kPerThread <= cols) {
      const float4 a = __ldcs(reinterpret_cast<const float4*>(in + first));
      const float4 b = __ldcs(reinterpret_cast<const float4*>(in + first + 4));
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z,
      v[7] = b.w;
    } else {
#pragma unroll
      for (int k = 0; k < kPerThread; ++k) v[k] = first + k < cols ? in[first + k] : 0.f;
    }
#pragma unroll
    for (int k = 1; k < kPerThread; ++k) v[k] += v[k - 1];
    float total = 0.f;
    const float inclusive = BlockScan(v[kPerThread - 1], warp_sums, &total);
    const float offset = carry + inclusive - v[kPerThread - 1];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) v[k] += offset;
    if (kVector && first + kPerThread <= cols) {
      __stcs(reinterpret_cast<float4*>(out + first), make_float4(v[0], v[1], v[2], v[3]));
      __stcs(reinterpret_cast<float4*>(out + first + 4), make_float4(v[4], v[5], v[6], v[7]));
    } else {
#pragma unroll
      for (int k = 0; k < kPerThread; ++k) {
        if (first + k < cols) out[first + k] = v[k];
      }
    }
    carry += total;
  }
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
  const bool vector =
      cols % 4 == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
  if (vector) {
    RowScan<true><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, y, cols);
  } else {
    RowScan<false><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, y, cols);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
