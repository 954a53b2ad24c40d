// Dense f32 matrix product, register-tiled on the CUDA cores (f32 FMA: no TF32, whose 10-bit
// mantissa would miss the task's tolerance).
//
// A block of 256 threads computes a 128 x 128 tile of C; each thread an 8 x 8 sub-tile in
// registers. K advances 8 at a time through two shared-memory buffers: the next slice of A
// (stored transposed) and B is loaded into registers while the current one is multiplied, so
// one barrier per slice suffices. Inner loop: two 16-byte shared loads of A and two of B feed
// 64 FMAs. Loads and stores are bounds-checked, so any M, N, K works.
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kThreads = 256, kTM = 8, kTN = 8;

bool IsMatrix(const kope_tensor& t) {
  return t.dtype == KOPE_F32 && t.ndim == 2 && t.shape[0] >= 1 && t.shape[1] >= 1 &&
         (t.shape[1] == 1 || t.strides[1] == 1) && (t.shape[0] == 1 || t.strides[0] == t.shape[1]);
}

__global__ void __launch_bounds__(kThreads)
    Sgemm(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
          int n, int k) {
  __shared__ __align__(16) float as[2][kBK][kBM];  // A slice, transposed: as[k][row]
  __shared__ __align__(16) float bs[2][kBK][kBN];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  // Which elements this thread loads: A rows tid/2, columns (tid%2)*4..+3; B row tid/32,
  // columns (tid%32)*4..+3.
  const int a_row = tid / 2, a_col = (tid % 2) * 4;
  const int b_row = tid / 32, b_col = (tid % 32) * 4;
  float a_next[4], b_next[4];
  auto load = [&](int k0) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int ar = row0 + a_row, ac = k0 + a_col + j;
      a_next[j] = ar < m && ac < k ? a[static_cast<int64_t>(ar) * k + ac] : 0.f;
      const int br = k0 + b_row, bc = col0 + b_col + j;
      b_next[j] = br < k && bc < n ? b[static_cast<int64_t>(br) * n + bc] : 0.f;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      as[buf][a_col + j][a_row] = a_next[j];
      bs[buf][b_row][b_col + j] = b_next[j];
    }
  };
  float acc[kTM][kTN] = {};
  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int k0 = 0; k0 < k; k0 += kBK) {
    const bool more = k0 + kBK < k;
    if (more) load(k0 + kBK);
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[buf][kk][ty * kTM]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[buf][kk][ty * kTM + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[buf][kk][tx * kTN]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[buf][kk][tx * kTN + 4]);
      const float av[kTM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[kTN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    if (more) store(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int r = row0 + ty * kTM + i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int col = col0 + tx * kTN + j;
      if (col < n) c[static_cast<int64_t>(r) * n + col] = acc[i][j];
    }
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (!IsMatrix(inputs[0]) || !IsMatrix(inputs[1]) || !IsMatrix(outputs[0])) return 2;
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k || outputs[0].shape[0] != m || outputs[0].shape[1] != n) return 3;
  if (m > (1 << 30) || n > (1 << 30) || k > (1 << 30)) return 5;
  const dim3 grid(static_cast<unsigned>((n + kBN - 1) / kBN),
                  static_cast<unsigned>((m + kBM - 1) / kBM));
  Sgemm<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), static_cast<int>(m), static_cast<int>(n),
      static_cast<int>(k));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
