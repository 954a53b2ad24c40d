// Contain: never returns (spins on a volatile flag that nothing clears).
// Task: examples/gelu. Expected verdict: timeout (the runner's process group is killed at the
// per-call wall-clock limit, well before the CPU-time rlimit would end it with SIGXCPU).
#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* /*outputs*/,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  volatile bool spinning = true;
  while (spinning) {
  }
  return 0;
}
