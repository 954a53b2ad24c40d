// Inclusive prefix sums along rows, a seed for kope's tuner (docs/WORKFLOW.md): kRows rows are
// scanned side by side (their dependent chains of adds interleave, so the adder is kept busy),
// each in double precision like the baseline; groups of rows are shared among kThreads OpenMP
// threads.
#include <cstdint>

#include "kope/kernel.h"

constexpr int kRows = 1;     // kope:tune 1 2 4 8
constexpr int kThreads = 1;  // kope:tune 1 2 4

namespace {

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 2) return false;
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
  if (!IsContiguousF32(x) || !IsContiguousF32(y)) return 2;
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1]) return 3;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  const int64_t groups = (rows + kRows - 1) / kRows;
#pragma omp parallel for num_threads(kThreads) schedule(static) if (groups > 1)
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t r0 = g * kRows;
    const int64_t count = rows - r0 < kRows ? rows - r0 : kRows;
    if (count == kRows) {
      double sums[kRows] = {};
      for (int64_t c = 0; c < cols; ++c) {
        for (int r = 0; r < kRows; ++r) {
          sums[r] += in[(r0 + r) * cols + c];
          out[(r0 + r) * cols + c] = static_cast<float>(sums[r]);
        }
      }
    } else {
      for (int64_t r = r0; r < r0 + count; ++r) {
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          sum += in[r * cols + c];
          out[r * cols + c] = static_cast<float>(sum);
        }
      }
    }
  }
  return 0;
}
