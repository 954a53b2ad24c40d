// Scaled dot-product attention, one query row at a time: scores, softmax, weighted sum of V.
// The code to beat and the reference. Softmax sums and the weighted sum of V are in double.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kope/kernel.h"

namespace {

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
  std::vector<float> scores(seq);
  std::vector<double> weights(seq);
  for (int64_t bh = 0; bh < heads; ++bh) {
    const float* qh = static_cast<const float*>(q.data) + bh * seq * dim;
    const float* kh = static_cast<const float*>(k.data) + bh * seq * dim;
    const float* vh = static_cast<const float*>(v.data) + bh * seq * dim;
    float* oh = static_cast<float*>(o.data) + bh * seq * dim;
    for (int64_t i = 0; i < seq; ++i) {
      float max = -INFINITY;
      for (int64_t j = 0; j < seq; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < dim; ++d) dot += qh[i * dim + d] * kh[j * dim + d];
        scores[j] = dot * scale;
        max = std::fmax(max, scores[j]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < seq; ++j) {
        weights[j] = std::exp(static_cast<double>(scores[j] - max));
        sum += weights[j];
      }
      for (int64_t d = 0; d < dim; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < seq; ++j) acc += weights[j] * vh[j * dim + d];
        oh[i * dim + d] = static_cast<float>(acc / sum);
      }
    }
  }
  return 0;
}
