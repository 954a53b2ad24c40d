// An OpenMP kernel: y = x + 1 in parallel; stats (i64) = {threads seen, sum of
// thread ids seen}.
#include <omp.h>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int, void*) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const int64_t n = inputs[0].shape[0];
  float* y = static_cast<float*>(outputs[0].data);
  int64_t* stats = static_cast<int64_t*>(outputs[1].data);
  int threads = 0;
  int64_t id_sum = 0;
#pragma omp parallel num_threads(4) reduction(+ : id_sum)
  {
#pragma omp single
    threads = omp_get_num_threads();
    id_sum += omp_get_thread_num();
#pragma omp for
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] + 1.0f;
  }
  stats[0] = threads;
  stats[1] = id_sum;
  return 0;
}
