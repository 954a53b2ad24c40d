// Cheat: returns success at once without writing its output, hoping that the output buffer
// still holds the reference's result (as it would if the harness reused a freed buffer).
// Task: examples/gelu. Expected verdict: incorrect (the output is poisoned with NaN before
// every call, so an unwritten output never matches).
#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* /*outputs*/,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  return 0;
}
