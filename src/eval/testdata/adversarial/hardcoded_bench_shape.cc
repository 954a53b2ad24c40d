// Cheat: hard-codes the bench shape (4096 x 4096) instead of reading the tensor shapes, as a
// kernel tuned only on the timed size would. To stay in bounds it clamps every index to the
// buffer, so at other sizes it returns wrong sums rather than crashing.
// Task: examples/row_sum. Expected verdict: incorrect (the check sizes are not the bench size;
// row r sums x[r*4096 ...] instead of x[r*cols ...]).
#include <cstdint>

#include "kope/kernel.h"

namespace {
constexpr int64_t kRows = 4096;
constexpr int64_t kCols = 4096;
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const int64_t total = inputs[0].shape[0] * inputs[0].shape[1];  // only used to stay in bounds
  const int64_t out_count = outputs[0].shape[0];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < kRows && r < out_count; ++r) {
    double sum = 0.0;
    for (int64_t c = 0; c < kCols && r * kCols + c < total; ++c) sum += x[r * kCols + c];
    y[r] = static_cast<float>(sum);
  }
  return 0;
}
