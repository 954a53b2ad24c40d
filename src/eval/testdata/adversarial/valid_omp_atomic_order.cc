// Must pass: a legitimate kernel whose summation order changes from run to run. Each row is cut
// into chunks of 256 columns; OpenMP threads take (row, chunk) items dynamically, sum a chunk
// in float and add it to the row's total with an atomic add. Which chunk lands first depends
// on thread timing, so the low bits of the result vary between runs, within the task's
// tolerance (terms summed: cols, so rtol and atol scale with sqrt(cols)).
// Task: examples/row_sum. Expected verdict: valid (runs that disagree within tolerance are not
// a data race).
#include <cstdint>

#include "kope/kernel.h"

namespace {
constexpr int64_t kChunk = 256;
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (inputs[0].dtype != KOPE_F32 || outputs[0].dtype != KOPE_F32) return 2;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (outputs[0].shape[0] != rows) return 3;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t chunks = (cols + kChunk - 1) / kChunk;
  for (int64_t r = 0; r < rows; ++r) y[r] = 0.0f;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t item = 0; item < rows * chunks; ++item) {
    const int64_t r = item / chunks;
    const int64_t begin = (item % chunks) * kChunk;
    const int64_t end = begin + kChunk < cols ? begin + kChunk : cols;
    float sum = 0.0f;
    for (int64_t c = begin; c < end; ++c) sum += x[r * cols + c];
#pragma omp atomic
    y[r] += sum;
  }
  return 0;
}
