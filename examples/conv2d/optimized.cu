// 2-D convolution (cross-correlation), NCHW, stride 1, no padding: direct, tiled in shared
// memory.
//
// A block of 16 x 16 threads computes a 16 x 16 patch of output pixels for 8 output channels
// (each thread one pixel, 8 accumulators). For every input channel it stages the patch's
// input window ((16 + KH - 1) x (16 + KW - 1)) and the 8 filters' KH x KW weights in shared
// memory, weights laid out [kh][kw][filter] so that one pixel value feeds 8 FMAs from two
// 16-byte broadcast loads. Any KH, KW, H, W (dynamic shared memory), bounds-checked stores.
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kTile = 16;
constexpr int kFilters = 8;

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 4) return false;
  int64_t expected = 1;
  for (int d = 3; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

__global__ void __launch_bounds__(kTile* kTile)
    Conv(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int c_in,
         int h, int wd, int f_out, int kh, int kw, int filter_groups) {
  extern __shared__ __align__(16) float smem[];
  const int win_h = kTile + kh - 1, win_w = kTile + kw - 1;
  float* ws = smem;                       // [kh][kw][kFilters]
  float* xs = smem + kh * kw * kFilters;  // [win_h][win_w]
  const int oh = h - kh + 1, ow = wd - kw + 1;
  const int n = blockIdx.z / filter_groups, f0 = (blockIdx.z % filter_groups) * kFilters;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  const int tid = threadIdx.y * kTile + threadIdx.x;
  float acc[kFilters] = {};
  for (int c = 0; c < c_in; ++c) {
    const float* xc = x + (static_cast<int64_t>(n) * c_in + c) * h * wd;
    for (int e = tid; e < win_h * win_w; e += kTile * kTile) {
      const int r = i0 + e / win_w, col = j0 + e % win_w;
      xs[e] = r < h && col < wd ? xc[static_cast<int64_t>(r) * wd + col] : 0.f;
    }
    for (int e = tid; e < kh * kw * kFilters; e += kTile * kTile) {
      const int f = e % kFilters, ab = e / kFilters;
      ws[e] = f0 + f < f_out ? w[((static_cast<int64_t>(f0 + f) * c_in + c) * kh) * kw + ab] : 0.f;
    }
    __syncthreads();
    for (int a = 0; a < kh; ++a) {
      for (int b = 0; b < kw; ++b) {
        const float v = xs[(threadIdx.y + a) * win_w + threadIdx.x + b];
        const float4 w0 = *reinterpret_cast<const float4*>(ws + (a * kw + b) * kFilters);
        const float4 w1 = *reinterpret_cast<const float4*>(ws + (a * kw + b) * kFilters + 4);
        acc[0] = fmaf(v, w0.x, acc[0]);
        acc[1] = fmaf(v, w0.y, acc[1]);
        acc[2] = fmaf(v, w0.z, acc[2]);
        acc[3] = fmaf(v, w0.w, acc[3]);
        acc[4] = fmaf(v, w1.x, acc[4]);
        acc[5] = fmaf(v, w1.y, acc[5]);
        acc[6] = fmaf(v, w1.z, acc[6]);
        acc[7] = fmaf(v, w1.w, acc[7]);
      }
    }
    __syncthreads();
  }
  const int i = i0 + threadIdx.y, j = j0 + threadIdx.x;
  if (i >= oh || j >= ow) return;
#pragma unroll
  for (int f = 0; f < kFilters; ++f) {
    if (f0 + f < f_out) {
      y[((static_cast<int64_t>(n) * f_out + f0 + f) * oh + i) * ow + j] = acc[f];
    }
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (!IsContiguousF32(inputs[0]) || !IsContiguousF32(inputs[1]) || !IsContiguousF32(outputs[0])) {
    return 2;
  }
  const int64_t n = inputs[0].shape[0], c = inputs[0].shape[1], h = inputs[0].shape[2],
                wd = inputs[0].shape[3];
  const int64_t f = inputs[1].shape[0], kh = inputs[1].shape[2], kw = inputs[1].shape[3];
  if (inputs[1].shape[1] != c || kh > h || kw > wd) return 3;
  if (h > (1 << 20) || wd > (1 << 20) || kh > 32 || kw > 32) return 5;
  const int64_t groups = (f + kFilters - 1) / kFilters;
  if (n * groups > 65535) return 5;
  const size_t smem = sizeof(float) * (kh * kw * kFilters + (kTile + kh - 1) * (kTile + kw - 1));
  if (smem > 48 * 1024) return 5;
  const dim3 grid(static_cast<unsigned>((wd - kw + 1 + kTile - 1) / kTile),
                  static_cast<unsigned>((h - kh + 1 + kTile - 1) / kTile),
                  static_cast<unsigned>(n * groups));
  Conv<<<grid, dim3(kTile, kTile), smem, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), static_cast<int>(c), static_cast<int>(h),
      static_cast<int>(wd), static_cast<int>(f), static_cast<int>(kh), static_cast<int>(kw),
      static_cast<int>(groups));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
