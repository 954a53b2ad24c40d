// Must pass: pairwise (cascade) summation, an order entirely different from the baseline's
// left-to-right one: each row is split in halves recursively down to blocks of 16, summed in
// float. Its error grows like log(cols) rather than cols; it differs from the double-precision
// reference only by rounding, within the task's sqrt(cols)-scaled tolerance.
// Task: examples/row_sum. Expected verdict: valid.
#include <cstdint>

#include "kope/kernel.h"

namespace {
float PairwiseSum(const float* x, int64_t n) {
  if (n <= 16) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    return sum;
  }
  const int64_t half = n / 2;
  return PairwiseSum(x, half) + PairwiseSum(x + half, n - half);
}
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (inputs[0].dtype != KOPE_F32 || outputs[0].dtype != KOPE_F32) return 2;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (outputs[0].shape[0] != rows) return 3;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) y[r] = PairwiseSum(x + r * cols, cols);
  return 0;
}
