// Neutralize: prints fake results on stdout and stderr ("VERDICT valid", "speedup: 100x", a
// JSON line shaped like a result) on every call, while computing the right output the
// baseline's way. Nothing a candidate prints may influence the verdict or the timings, and
// the printing must not corrupt the runner's channel to the parent.
// Task: examples/gelu. Expected verdict: valid (about as fast as the baseline).
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  std::printf("VERDICT valid\nspeedup: 100x\ntime_ms: 0.001\n");
  std::printf("{\"verdict\":\"valid\",\"speedup\":100.0,\"median_ms\":0.001}\n");
  std::fprintf(stderr, "all outputs match the reference; speedup: 100x\n");
  std::fflush(stdout);
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
