// Multi-head attention, flash style, f32 on the CUDA cores: one pass over K and V, no S x S
// score matrix in memory.
//
// A block of 64 threads takes 64 query rows of one (batch, head); each thread keeps its scaled
// query row and its output row in registers (head size padded to 16, 32, 64 or 128 at compile
// time, zeros beyond D). K and V stream through shared memory 64 rows at a time; for every 16
// keys a thread computes the scores, updates its running max, rescales its output and sum once,
// and accumulates p * V. Shared reads are 16-byte broadcasts (all threads read the same key).
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kRows = 64;   // query rows per block (one per thread)
constexpr int kKeys = 64;   // keys staged per tile
constexpr int kChunk = 16;  // keys scored at once

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

template <int kD>
__global__ void __launch_bounds__(kRows)
    Flash(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
          float* __restrict__ o, int s, int d, float scale) {
  __shared__ __align__(16) float ks[kKeys][kD];
  __shared__ __align__(16) float vs[kKeys][kD];
  const int64_t head = blockIdx.y;
  const int row = blockIdx.x * kRows + threadIdx.x;
  const float* kh = k + head * s * d;
  const float* vh = v + head * s * d;
  float qr[kD], acc[kD];
#pragma unroll
  for (int e = 0; e < kD; ++e) {
    qr[e] = row < s && e < d ? q[(head * s + row) * d + e] * scale : 0.f;
    acc[e] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int t0 = 0; t0 < s; t0 += kKeys) {
    for (int idx = threadIdx.x; idx < kKeys * kD; idx += kRows) {
      const int j = idx / kD, e = idx % kD;
      const bool in = t0 + j < s && e < d;
      ks[j][e] = in ? kh[static_cast<int64_t>(t0 + j) * d + e] : 0.f;
      vs[j][e] = in ? vh[static_cast<int64_t>(t0 + j) * d + e] : 0.f;
    }
    __syncthreads();
    const int keys = s - t0 < kKeys ? s - t0 : kKeys;
    for (int c0 = 0; c0 < keys; c0 += kChunk) {
      float sc[kChunk];
      float chunk_max = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < kChunk; ++jj) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < kD; e += 4) {
          const float4 kv = *reinterpret_cast<const float4*>(&ks[c0 + jj][e]);
          dot = fmaf(qr[e], kv.x, dot);
          dot = fmaf(qr[e + 1], kv.y, dot);
          dot = fmaf(qr[e + 2], kv.z, dot);
          dot = fmaf(qr[e + 3], kv.w, dot);
        }
        sc[jj] = c0 + jj < keys ? dot : -INFINITY;
        chunk_max = fmaxf(chunk_max, sc[jj]);
      }
      const float new_m = fmaxf(m, chunk_max);
      const float rescale = __expf(m - new_m);  // 0 on the first chunk (m = -inf)
      l *= rescale;
#pragma unroll
      for (int e = 0; e < kD; ++e) acc[e] *= rescale;
#pragma unroll
      for (int jj = 0; jj < kChunk; ++jj) {
        const float p = __expf(sc[jj] - new_m);
        l += p;
#pragma unroll
        for (int e = 0; e < kD; e += 4) {
          const float4 vv = *reinterpret_cast<const float4*>(&vs[c0 + jj][e]);
          acc[e] = fmaf(p, vv.x, acc[e]);
          acc[e + 1] = fmaf(p, vv.y, acc[e + 1]);
          acc[e + 2] = fmaf(p, vv.z, acc[e + 2]);
          acc[e + 3] = fmaf(p, vv.w, acc[e + 3]);
        }
      }
      m = new_m;
    }
    __syncthreads();
  }
  if (row >= s) return;
  const float inv = 1.0f / l;
#pragma unroll
  for (int e = 0; e < kD; ++e) {
    if (e < d) o[(head * s + row) * d + e] = acc[e] * inv;
  }
}

template <int kD>
void Launch(const float* q, const float* k, const float* v, float* o, int64_t heads, int s, int d,
            cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((s + kRows - 1) / kRows), static_cast<unsigned>(heads));
  Flash<kD><<<grid, kRows, 0, stream>>>(q, k, v, o, s, d, 1.0f / sqrtf(static_cast<float>(d)));
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  for (int i = 0; i < 3; ++i) {
    if (!IsContiguousF32(inputs[i])) return 2;
    for (int dim = 0; dim < 4; ++dim) {
      if (inputs[i].shape[dim] != inputs[0].shape[dim]) return 3;
    }
  }
  if (!IsContiguousF32(outputs[0])) return 2;
  const int64_t b = inputs[0].shape[0], h = inputs[0].shape[1], s = inputs[0].shape[2],
                d = inputs[0].shape[3];
  if (b * h > 65535 || s > (1 << 30)) return 5;
  const auto* q = static_cast<const float*>(inputs[0].data);
  const auto* k = static_cast<const float*>(inputs[1].data);
  const auto* v = static_cast<const float*>(inputs[2].data);
  auto* o = static_cast<float*>(outputs[0].data);
  auto st = static_cast<cudaStream_t>(stream);
  const int si = static_cast<int>(s), di = static_cast<int>(d);
  if (d <= 16) {
    Launch<16>(q, k, v, o, b * h, si, di, st);
  } else if (d <= 32) {
    Launch<32>(q, k, v, o, b * h, si, di, st);
  } else if (d <= 64) {
    Launch<64>(q, k, v, o, b * h, si, di, st);
  } else {
    return 6;  // head sizes above 64 are not handled by this kernel
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
