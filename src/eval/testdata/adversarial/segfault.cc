// Contain: an illegal memory access (a store to address 16, which is never mapped), the CPU
// analogue of a CUDA illegal address.
// Task: examples/gelu. Expected verdict: crash (SIGSEGV in the runner; the parent survives and
// the next candidate is unaffected).
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* /*outputs*/,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  volatile float* bad = reinterpret_cast<volatile float*>(static_cast<uintptr_t>(16));
  *bad = 1.0f;
  return 0;
}
