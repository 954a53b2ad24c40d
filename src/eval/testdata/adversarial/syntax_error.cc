// Compile/ABI: does not compile (a missing semicolon and an undeclared name), as a truncated
// or garbled model reply would.
// Task: examples/gelu. Expected verdict: compile_error (with the compiler's diagnostics).
#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1 float * y = static_cast<float*>(outputs[0].data);
  y[0] = undeclared_value;
  return 0;
}
