// Direct 2-D convolution, NCHW, stride 1, no padding, vectorized along output columns and
// threaded over output rows.
//
// A work item is one output row i of four output channels f..f+3 in one image. Its
// accumulators (4 channels x up to 64 columns) are updated by whole input-row segments:
// for every (c, kh, kw) the four weights are broadcast and multiplied into
// x[n][c][i+kh][kw .. kw+cols), a contiguous run that the compiler vectorizes. Each input row
// segment is reused by four channels, and every output element still sums its C*KH*KW terms
// in the baseline's order (c, kh, kw). Loops stop at the row's true length, so nothing
// outside x, w or y is touched. OpenMP hands work items to threads.
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int64_t kParallelThreshold = 1 << 16;  // multiply-adds
constexpr int kChannelBlock = 4;                 // output channels per work item
constexpr int64_t kColumnBlock = 64;             // output columns held in accumulators

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

struct Dims {
  int64_t channels, height, width, filters, kh_size, kw_size, out_h, out_w;
};

// Output row i, channels [f0, f0 + fcount), columns [j0, j0 + cols), of one image.
void RowBlock(const Dims& d, const float* x_img, const float* w, float* y_img, int64_t f0,
              int fcount, int64_t i, int64_t j0, int64_t cols) {
  float acc[kChannelBlock][kColumnBlock] = {};
  const int64_t taps = d.kh_size * d.kw_size;
  for (int64_t c = 0; c < d.channels; ++c) {
    for (int64_t kh = 0; kh < d.kh_size; ++kh) {
      const float* xr = x_img + (c * d.height + i + kh) * d.width + j0;
      for (int64_t kw = 0; kw < d.kw_size; ++kw) {
        const float* xs = xr + kw;
        for (int fb = 0; fb < fcount; ++fb) {
          const float wv = w[((f0 + fb) * d.channels + c) * taps + kh * d.kw_size + kw];
          float* a = acc[fb];
#pragma omp simd
          for (int64_t j = 0; j < cols; ++j) a[j] += wv * xs[j];
        }
      }
    }
  }
  for (int fb = 0; fb < fcount; ++fb) {
    float* yr = y_img + ((f0 + fb) * d.out_h + i) * d.out_w + j0;
    for (int64_t j = 0; j < cols; ++j) yr[j] = acc[fb][j];
  }
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (x.ndim != 4 || w.ndim != 4 || y.ndim != 4) return 2;
  if (!IsContiguousF32(x) || !IsContiguousF32(w) || !IsContiguousF32(y)) return 2;
  Dims d{x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2], w.shape[3], 0, 0};
  const int64_t n_batch = x.shape[0];
  if (w.shape[1] != d.channels || d.kh_size > d.height || d.kw_size > d.width) return 3;
  d.out_h = d.height - d.kh_size + 1;
  d.out_w = d.width - d.kw_size + 1;
  if (y.shape[0] != n_batch || y.shape[1] != d.filters || y.shape[2] != d.out_h ||
      y.shape[3] != d.out_w) {
    return 3;
  }

  const float* px = static_cast<const float*>(x.data);
  const float* pw = static_cast<const float*>(w.data);
  float* py = static_cast<float*>(y.data);
  const int64_t fblocks = (d.filters + kChannelBlock - 1) / kChannelBlock;
  const int64_t items = n_batch * fblocks * d.out_h;
  const int64_t work = items * d.out_w * d.channels * d.kh_size * d.kw_size;
#pragma omp parallel for schedule(static) if (work >= kParallelThreshold)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t i = item % d.out_h;
    const int64_t f0 = (item / d.out_h) % fblocks * kChannelBlock;
    const int64_t n = item / (d.out_h * fblocks);
    const int fcount =
        static_cast<int>(d.filters - f0 < kChannelBlock ? d.filters - f0 : kChannelBlock);
    const float* x_img = px + n * d.channels * d.height * d.width;
    float* y_img = py + n * d.filters * d.out_h * d.out_w;
    for (int64_t j0 = 0; j0 < d.out_w; j0 += kColumnBlock) {
      const int64_t cols = d.out_w - j0 < kColumnBlock ? d.out_w - j0 : kColumnBlock;
      RowBlock(d, x_img, pw, y_img, f0, fcount, i, j0, cols);
    }
  }
  return 0;
}
