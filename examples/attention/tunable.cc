// Scaled dot-product attention (no mask), a seed for kope's tuner (docs/WORKFLOW.md): per
// (batch, head), blocks of kQueries queries go through K and V together, so each K and V row is
// loaded once per block: scores by dot products along D, a softmax per query (f32, std::exp),
// then the output rows as sums of V rows (vectorized along D). (batch x head, query block) work
// items are shared among kThreads OpenMP threads.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kope/kernel.h"

constexpr int kQueries = 1;  // kope:tune 1 2 4 8 16
constexpr int kThreads = 1;  // kope:tune 1 2 4

namespace {

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 4) return false;
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

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kope_tensor& q = inputs[0];
  const kope_tensor& k = inputs[1];
  const kope_tensor& v = inputs[2];
  kope_tensor& o = outputs[0];
  if (!IsContiguousF32(q) || !SameShape(q, k) || !SameShape(q, v) || !SameShape(q, o)) return 2;
  if (!IsContiguousF32(k) || !IsContiguousF32(v) || !IsContiguousF32(o)) return 2;
  const int64_t heads = q.shape[0] * q.shape[1], seq = q.shape[2], dim = q.shape[3];
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const int64_t blocks = (seq + kQueries - 1) / kQueries;
#pragma omp parallel num_threads(kThreads)
  {
    std::vector<float> scores(static_cast<size_t>(kQueries * seq));
#pragma omp for collapse(2) schedule(static)
    for (int64_t bh = 0; bh < heads; ++bh) {
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const float* qh = static_cast<const float*>(q.data) + bh * seq * dim;
        const float* kh = static_cast<const float*>(k.data) + bh * seq * dim;
        const float* vh = static_cast<const float*>(v.data) + bh * seq * dim;
        float* oh = static_cast<float*>(o.data) + bh * seq * dim;
        const int64_t i0 = blk * kQueries;
        const int64_t count = seq - i0 < kQueries ? seq - i0 : kQueries;
        for (int64_t j = 0; j < seq; ++j) {
          const float* krow = kh + j * dim;
          for (int64_t t = 0; t < count; ++t) {
            const float* qrow = qh + (i0 + t) * dim;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t d = 0; d < dim; ++d) dot += qrow[d] * krow[d];
            scores[t * seq + j] = dot * scale;
          }
        }
        for (int64_t t = 0; t < count; ++t) {
          float* s = scores.data() + t * seq;
          float max = s[0];
          for (int64_t j = 1; j < seq; ++j) max = std::fmax(max, s[j]);
          float sum = 0.0f;
          for (int64_t j = 0; j < seq; ++j) {
            s[j] = std::exp(s[j] - max);
            sum += s[j];
          }
          const float inv = 1.0f / sum;
          for (int64_t j = 0; j < seq; ++j) s[j] *= inv;
          float* orow = oh + (i0 + t) * dim;
          for (int64_t d = 0; d < dim; ++d) orow[d] = 0.0f;
        }
        for (int64_t j = 0; j < seq; ++j) {
          const float* vrow = vh + j * dim;
          for (int64_t t = 0; t < count; ++t) {
            const float p = scores[t * seq + j];
            float* orow = oh + (i0 + t) * dim;
#pragma omp simd
            for (int64_t d = 0; d < dim; ++d) orow[d] += p * vrow[d];
          }
        }
      }
    }
  }
  return 0;
}
