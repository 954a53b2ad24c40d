// Compile/ABI: compiles, but exports no `kope_kernel` symbol: the function is declared without
// extern "C", so its name is C++-mangled, and a differently named C function sits beside it.
// Task: examples/gelu. Expected verdict: compile_error (the shared object lacks the entry
// point; that is found when the object is built and checked, before anything runs).
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

namespace {
int Gelu(const kope_tensor* inputs, kope_tensor* outputs) {
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return 0;
}
}  // namespace

int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs, int n_outputs,
                void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  return Gelu(inputs, outputs);
}

extern "C" int kope_kernel_v2(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                              int n_outputs, void* stream) {
  return kope_kernel(inputs, n_inputs, outputs, n_outputs, stream);
}
