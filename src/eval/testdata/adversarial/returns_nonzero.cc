// Compile/ABI: computes nothing and returns 7, the ABI's way of reporting a failure.
// Task: examples/gelu. Expected verdict: runtime_error (with the return code, 7).
#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int /*n_inputs*/,
                           kope_tensor* /*outputs*/, int /*n_outputs*/, void* /*stream*/) {
  return 7;
}
