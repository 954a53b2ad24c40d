// Cheat (a bug that can pass a first call): reads uninitialized memory. Per-row partial sums
// live in a malloc'd scratch buffer that is accumulated into without ever being zeroed, as if
// malloc returned zeros. The first call may get fresh zero pages; later calls get the chunk
// that the previous call freed, still holding its old sums (and allocator bookkeeping), which
// are added to the result.
// Task: examples/row_sum. Expected verdict: incorrect (every trial calls the kernel twice, and
// there are several trials per size).
#include <cstdint>
#include <cstdlib>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  double* partial = static_cast<double*>(std::malloc(static_cast<size_t>(rows) * sizeof(double)));
  if (partial == nullptr) return 1;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) partial[r] += x[r * cols + c];  // never zeroed
    y[r] = static_cast<float>(partial[r]);
  }
  std::free(partial);
  return 0;
}
