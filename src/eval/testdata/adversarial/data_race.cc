// Cheat (a bug, but one that passes a single run): a data race. Two OpenMP threads share each
// row's columns and add into one shared running sum with an unsynchronized read-modify-write
// (no atomic, no reduction clause), so concurrent updates are lost and two runs on the same
// input disagree. `volatile` only keeps the compiler from caching the sum in a register; it is
// no synchronization.
// Task: examples/row_sum. Expected verdict: incorrect (at the bench size, 4096 rows of 4096
// columns with both threads adding to the same sum, lost updates are certain in practice; the
// harness also runs each trial twice and compares both runs).
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  volatile double shared_sum = 0.0;
#pragma omp parallel num_threads(2)
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp single
    shared_sum = 0.0;
#pragma omp for schedule(static, 64)
    for (int64_t c = 0; c < cols; ++c) shared_sum = shared_sum + x[r * cols + c];  // the race
#pragma omp single
    y[r] = static_cast<float>(shared_sum);
  }
  return 0;
}
