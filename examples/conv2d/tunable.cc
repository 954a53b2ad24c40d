// Direct 2-D convolution (valid padding), a seed for kope's tuner (docs/WORKFLOW.md): for each
// output row, every (channel, kh, kw) tap adds a contiguous input-row segment times a weight into
// the rows of kFilters output channels at once (the segment is loaded once for all of them); the
// innermost loop runs along the row and vectorizes; (batch, filter group, row) work items are
// shared among kThreads OpenMP threads.
#include <cstdint>

#include "kope/kernel.h"

constexpr int kFilters = 1;  // kope:tune 1 2 4 8
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

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (!IsContiguousF32(x) || !IsContiguousF32(w) || !IsContiguousF32(y)) return 2;
  const int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2],
                width = x.shape[3];
  const int64_t filters = w.shape[0], kh_size = w.shape[2], kw_size = w.shape[3];
  if (w.shape[1] != channels || kh_size > height || kw_size > width) return 3;
  const int64_t out_h = height - kh_size + 1, out_w = width - kw_size + 1;
  if (y.shape[0] != batch || y.shape[1] != filters || y.shape[2] != out_h ||
      y.shape[3] != out_w) {
    return 3;
  }
  const float* px = static_cast<const float*>(x.data);
  const float* pw = static_cast<const float*>(w.data);
  float* py = static_cast<float*>(y.data);
  const int64_t groups = (filters + kFilters - 1) / kFilters;
#pragma omp parallel for collapse(3) num_threads(kThreads) schedule(static)
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t i = 0; i < out_h; ++i) {
        const int64_t f0 = g * kFilters;
        const int64_t count = filters - f0 < kFilters ? filters - f0 : kFilters;
        float* rows[kFilters];
        for (int64_t f = 0; f < count; ++f) {
          rows[f] = py + ((n * filters + f0 + f) * out_h + i) * out_w;
          for (int64_t j = 0; j < out_w; ++j) rows[f][j] = 0.0f;
        }
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t kh = 0; kh < kh_size; ++kh) {
            const float* xrow = px + ((n * channels + c) * height + i + kh) * width;
            for (int64_t kw = 0; kw < kw_size; ++kw) {
              for (int64_t f = 0; f < count; ++f) {
                const float wv = pw[(((f0 + f) * channels + c) * kh_size + kh) * kw_size + kw];
                float* yrow = rows[f];
#pragma omp simd
                for (int64_t j = 0; j < out_w; ++j) yrow[j] += wv * xrow[j + kw];
              }
            }
          }
        }
      }
    }
  }
  return 0;
}
