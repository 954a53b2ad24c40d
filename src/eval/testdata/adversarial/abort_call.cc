// Contain: calls abort() (as a failed assert or an uncaught exception would).
// Task: examples/gelu. Expected verdict: crash (SIGABRT in the runner).
#include <cstdlib>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* /*outputs*/,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  std::abort();
}
