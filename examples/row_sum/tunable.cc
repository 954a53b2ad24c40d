// Row sums, a seed for kope's tuner (docs/WORKFLOW.md): each row is summed into kLanes
// independent double partial sums (1: one dependent chain of adds; more: the compiler
// vectorizes), merged at the end; rows are shared among kThreads OpenMP threads.
#include <cstdint>

#include "kope/kernel.h"

constexpr int kLanes = 1;    // kope:tune 1 4 8 16 32
constexpr int kThreads = 1;  // kope:tune 1 2 4

namespace {

bool IsContiguousF32(const kope_tensor& t, int ndim) {
  if (t.dtype != KOPE_F32 || t.ndim != ndim) return false;
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
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kope_tensor& x = inputs[0];
  kope_tensor& y = outputs[0];
  if (!IsContiguousF32(x, 2) || !IsContiguousF32(y, 1)) return 2;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (y.shape[0] != rows) return 3;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
#pragma omp parallel for num_threads(kThreads) schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * cols;
    double lanes[kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= cols; c += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += xr[c + l];
    }
    for (int l = 0; c < cols; ++c, ++l) lanes[l] += xr[c];
    double sum = 0.0;
    for (int l = 0; l < kLanes; ++l) sum += lanes[l];
    out[r] = static_cast<float>(sum);
  }
  return 0;
}
