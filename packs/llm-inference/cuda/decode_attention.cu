// Decode attention over a KV cache on a GPU, bf16, grouped-query: one new token per sequence.
//   out[b, h, :] = softmax(q[b, h, :] . K[b, h / G, j, :] * d^-1/2 over j < len[b]) . V[b, h / G]
// with q and out [b, hq, 1, d] (HF's layout, q_len 1), K and V [b, hkv, s, d] (the layout of
// HF's DynamicCache and StaticCache), G = hq / hkv, head_dim d one of 64, 128, 256. With a third
// input `lengths` (i64 [b], StaticCache: the filled prefix of each row) only j < lengths[b]
// count; without it all s positions do.
// Split-K (flash decoding): grid (b * hkv, splits); each block reads its K/V chunk once for the
// G query heads that share it (one warp per key at a time, online softmax per warp), writes
// partial (max, sum, acc) to scratch from the stream-ordered allocator; a second kernel merges.
#include <cuda_bf16.h>

#include <cstdint>

#include "kope/kernel.h"

constexpr int kWarps = 4;           // kope:tune 2 4 8
constexpr int kKeysPerSplit = 256;  // kope:tune 128 256 512 1024
constexpr int kMaxGroup = 8;

namespace {

struct Shape {
  int64_t b, hq, hkv, s, d;
};

template <int E>  // elements per lane: d / 32
__global__ void Partial(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                        const __nv_bfloat16* __restrict__ v, const int64_t* __restrict__ lengths,
                        Shape sh, float* __restrict__ part, int splits) {
  const int64_t bk = blockIdx.x, batch = bk / sh.hkv, kvh = bk % sh.hkv;
  const int group = static_cast<int>(sh.hq / sh.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t len = lengths ? (lengths[batch] < sh.s ? lengths[batch] : sh.s) : sh.s;
  const int64_t begin = blockIdx.y * int64_t{kKeysPerSplit};
  const int64_t end = begin + kKeysPerSplit < len ? begin + kKeysPerSplit : len;
  const float scale = rsqrtf(static_cast<float>(sh.d));
  float qf[kMaxGroup][E], acc[kMaxGroup][E], m[kMaxGroup], l[kMaxGroup];
  for (int g = 0; g < group; ++g) {
    const __nv_bfloat16* qr = q + ((batch * sh.hq) + kvh * group + g) * sh.d;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      qf[g][e] = __bfloat162float(qr[lane * E + e]) * scale;
      acc[g][e] = 0.0f;
    }
    m[g] = -INFINITY;
    l[g] = 0.0f;
  }
  const __nv_bfloat16* kb = k + (batch * sh.hkv + kvh) * sh.s * sh.d;
  const __nv_bfloat16* vb = v + (batch * sh.hkv + kvh) * sh.s * sh.d;
  for (int64_t j = begin + warp; j < end; j += kWarps) {
    float kf[E], vf[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
      kf[e] = __bfloat162float(kb[j * sh.d + lane * E + e]);
      vf[e] = __bfloat162float(vb[j * sh.d + lane * E + e]);
    }
    for (int g = 0; g < group; ++g) {
      float dot = 0.0f;
#pragma unroll
      for (int e = 0; e < E; ++e) dot += qf[g][e] * kf[e];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      const float nm = fmaxf(m[g], dot), c = __expf(m[g] - nm), p = __expf(dot - nm);
      l[g] = l[g] * c + p;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[g][e] = acc[g][e] * c + p * vf[e];
      m[g] = nm;
    }
  }
  // Per warp partials to scratch: [b*hkv][split][warp][g] of (m, l, acc[d]).
  const int64_t stride = 2 + sh.d;
  float* out = part + (((bk * splits + blockIdx.y) * kWarps + warp) * kMaxGroup) * stride;
  for (int g = 0; g < group; ++g) {
    if (lane == 0) {
      out[g * stride] = m[g];
      out[g * stride + 1] = l[g];
    }
#pragma unroll
    for (int e = 0; e < E; ++e) out[g * stride + 2 + lane * E + e] = acc[g][e];
  }
}

__global__ void Merge(const float* __restrict__ part, Shape sh, int splits,
                      __nv_bfloat16* __restrict__ o) {
  const int64_t bh = blockIdx.x, batch = bh / sh.hq, h = bh % sh.hq;
  const int group = static_cast<int>(sh.hq / sh.hkv);
  const int64_t kvh = h / group, g = h % group, stride = 2 + sh.d;
  const int64_t pieces = int64_t{splits} * kWarps;
  const float* base = part + ((batch * sh.hkv + kvh) * pieces) * kMaxGroup * stride;
  float mx = -INFINITY;
  for (int64_t p = 0; p < pieces; ++p) mx = fmaxf(mx, base[(p * kMaxGroup + g) * stride]);
  for (int64_t c = threadIdx.x; c < sh.d; c += blockDim.x) {
    float num = 0.0f, den = 0.0f;
    for (int64_t p = 0; p < pieces; ++p) {
      const float* r = base + (p * kMaxGroup + g) * stride;
      if (r[1] == 0.0f) continue;
      const float w = __expf(r[0] - mx);
      num += w * r[2 + c];
      den += w * r[1];
    }
    o[bh * sh.d + c] = __float2bfloat16_rn(den > 0.0f ? num / den : 0.0f);
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if ((n_inputs != 3 && n_inputs != 4) || n_outputs != 1) return 1;
  const kope_tensor &q = inputs[0], &k = inputs[1], &v = inputs[2];
  if (q.ndim != 4 || k.ndim != 4 || q.dtype != KOPE_BF16 || k.dtype != KOPE_BF16 ||
      v.dtype != KOPE_BF16 || q.shape[2] != 1) {
    return 2;
  }
  const Shape sh{k.shape[0], q.shape[1], k.shape[1], k.shape[2], k.shape[3]};
  if (q.shape[0] != sh.b || q.shape[3] != sh.d || sh.hq % sh.hkv != 0 ||
      sh.hq / sh.hkv > kMaxGroup) {
    return 3;
  }
  const int64_t* lengths = nullptr;
  if (n_inputs == 4) {
    if (inputs[3].dtype != KOPE_I64) return 2;
    lengths = static_cast<const int64_t*>(inputs[3].data);
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int splits = static_cast<int>((sh.s + kKeysPerSplit - 1) / kKeysPerSplit);
  float* part = nullptr;
  const size_t bytes = sizeof(float) * sh.b * sh.hkv * splits * kWarps * kMaxGroup * (2 + sh.d);
  if (cudaMallocAsync(&part, bytes, s) != cudaSuccess) return 4;
  cudaMemsetAsync(part, 0, bytes, s);  // empty pieces: l = 0
  const dim3 grid(static_cast<unsigned>(sh.b * sh.hkv), static_cast<unsigned>(splits));
  const auto* qp = static_cast<const __nv_bfloat16*>(q.data);
  const auto* kp = static_cast<const __nv_bfloat16*>(k.data);
  const auto* vp = static_cast<const __nv_bfloat16*>(v.data);
  switch (sh.d) {
    case 64:
      Partial<2><<<grid, kWarps * 32, 0, s>>>(qp, kp, vp, lengths, sh, part, splits);
      break;
    case 128:
      Partial<4><<<grid, kWarps * 32, 0, s>>>(qp, kp, vp, lengths, sh, part, splits);
      break;
    case 256:
      Partial<8><<<grid, kWarps * 32, 0, s>>>(qp, kp, vp, lengths, sh, part, splits);
      break;
    default:
      cudaFreeAsync(part, s);
      return 3;
  }
  Merge<<<static_cast<unsigned>(sh.b * sh.hq), 128, 0, s>>>(
      part, sh, splits, static_cast<__nv_bfloat16*>(outputs[0].data));
  cudaFreeAsync(part, s);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
