// Scaled dot-product attention, vectorized along keys and head dimension, threaded over blocks
// of query rows.
//
// A work item is one (batch, head) and a block of up to 32 query rows. It first transposes
// that head's K into K^T [D][S] (scratch), so the scores of a query against all keys become
// S-long vector updates s[0..S) += q[d] * K^T[d][0..S), summed over d in the baseline's order.
// The softmax uses a branch-free exponential (Cephes range reduction and polynomial, about
// 1 ulp) written as plain arithmetic on arrays, which the compiler vectorizes; the output row
// is accumulated as o[0..D) += p[j] * V[j][0..D), again contiguous vector updates. No
// intrinsics: the loops are written for the auto-vectorizer (`omp simd`), so the same code
// runs with AVX-512, AVX2 or SSE. Every loop runs to the true S and D: nothing out of bounds.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kope/kernel.h"

namespace {

constexpr int64_t kRowBlock = 32;                // query rows per work item
constexpr int64_t kParallelThreshold = 1 << 16;  // multiply-adds

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim < 1 || t.ndim > KOPE_MAX_DIMS) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

bool SameShape(const kope_tensor& a, const kope_tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
  }
  return true;
}

// exp(z) for z <= 0 (softmax arguments); inputs below -87 give about 1e-38.
#pragma omp declare simd
inline float ExpNonPositive(float z) {
  z = z < -87.0f ? -87.0f : z;
  const float n = std::floor(z * 1.44269504088896341f + 0.5f);
  float r = z - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + (r + 1.0f);
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 0]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

struct Head {
  const float* q;
  const float* k;
  const float* v;
  float* o;
};

// Rows [row_begin, row_end) of one head. kt holds S*D floats, s S floats, acc D floats.
void AttendRows(const Head& h, int64_t seq, int64_t dim, float scale, int64_t row_begin,
                int64_t row_end, float* kt, float* s, float* acc) {
  for (int64_t j = 0; j < seq; ++j) {
    for (int64_t d = 0; d < dim; ++d) kt[d * seq + j] = h.k[j * dim + d];
  }
  for (int64_t i = row_begin; i < row_end; ++i) {
    const float* qi = h.q + i * dim;
#pragma omp simd
    for (int64_t j = 0; j < seq; ++j) s[j] = 0.0f;
    for (int64_t d = 0; d < dim; ++d) {
      const float qd = qi[d];
      const float* ktd = kt + d * seq;
#pragma omp simd
      for (int64_t j = 0; j < seq; ++j) s[j] += qd * ktd[j];
    }
    float max = -INFINITY;
#pragma omp simd reduction(max : max)
    for (int64_t j = 0; j < seq; ++j) {
      s[j] *= scale;
      max = s[j] > max ? s[j] : max;
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < seq; ++j) {
      s[j] = ExpNonPositive(s[j] - max);
      sum += s[j];
    }
#pragma omp simd
    for (int64_t d = 0; d < dim; ++d) acc[d] = 0.0f;
    for (int64_t j = 0; j < seq; ++j) {
      const float p = s[j];
      const float* vj = h.v + j * dim;
#pragma omp simd
      for (int64_t d = 0; d < dim; ++d) acc[d] += p * vj[d];
    }
    const float inv = 1.0f / sum;
    float* oi = h.o + i * dim;
#pragma omp simd
    for (int64_t d = 0; d < dim; ++d) oi[d] = acc[d] * inv;
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& q = inputs[0];
  const kope_tensor& k = inputs[1];
  const kope_tensor& v = inputs[2];
  kope_tensor& o = outputs[0];
  if (q.ndim != 4 || !SameShape(q, k) || !SameShape(q, v) || !SameShape(q, o)) return 2;
  if (!IsContiguousF32(q) || !IsContiguousF32(k) || !IsContiguousF32(v) || !IsContiguousF32(o)) {
    return 2;
  }

  const int64_t heads = q.shape[0] * q.shape[1], seq = q.shape[2], dim = q.shape[3];
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const int64_t blocks = (seq + kRowBlock - 1) / kRowBlock;
  const bool parallel = heads * seq * seq * dim >= kParallelThreshold;
#pragma omp parallel if (parallel)
  {
    std::vector<float> kt(seq * dim), s(seq), acc(dim);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < heads * blocks; ++item) {
      const int64_t bh = item / blocks;
      const int64_t begin = (item % blocks) * kRowBlock;
      const int64_t end = begin + kRowBlock < seq ? begin + kRowBlock : seq;
      const int64_t offset = bh * seq * dim;
      const Head h{
          static_cast<const float*>(q.data) + offset, static_cast<const float*>(k.data) + offset,
          static_cast<const float*>(v.data) + offset, static_cast<float*>(o.data) + offset};
      AttendRows(h, seq, dim, scale, begin, end, kt.data(), s.data(), acc.data());
    }
  }
  return 0;
}
