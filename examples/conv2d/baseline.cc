// Direct 2-D convolution, NCHW, stride 1, no padding: seven nested loops, one output element
// at a time. The code to beat and the reference.
#include <cstdint>

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

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  const kope_tensor& w = inputs[1];
  kope_tensor& y = outputs[0];
  if (x.ndim != 4 || w.ndim != 4 || y.ndim != 4) return 2;
  if (!IsContiguousF32(x) || !IsContiguousF32(w) || !IsContiguousF32(y)) return 2;
  const int64_t n_batch = x.shape[0], channels = x.shape[1], height = x.shape[2],
                width = x.shape[3];
  const int64_t filters = w.shape[0], kh_size = w.shape[2], kw_size = w.shape[3];
  if (w.shape[1] != channels || kh_size > height || kw_size > width) return 3;
  const int64_t out_h = height - kh_size + 1, out_w = width - kw_size + 1;
  if (y.shape[0] != n_batch || y.shape[1] != filters || y.shape[2] != out_h ||
      y.shape[3] != out_w) {
    return 3;
  }

  const float* px = static_cast<const float*>(x.data);
  const float* pw = static_cast<const float*>(w.data);
  float* py = static_cast<float*>(y.data);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t f = 0; f < filters; ++f) {
      for (int64_t i = 0; i < out_h; ++i) {
        for (int64_t j = 0; j < out_w; ++j) {
          float sum = 0.0f;
          for (int64_t c = 0; c < channels; ++c) {
            for (int64_t kh = 0; kh < kh_size; ++kh) {
              for (int64_t kw = 0; kw < kw_size; ++kw) {
                sum += px[((n * channels + c) * height + i + kh) * width + j + kw] *
                       pw[((f * channels + c) * kh_size + kh) * kw_size + kw];
              }
            }
          }
          py[((n * filters + f) * out_h + i) * out_w + j] = sum;
        }
      }
    }
  }
  return 0;
}
