// Timing cheat: hands the work to a detached host thread and returns at once, so a clock
// around the call measures nothing. The thread starts computing 20 ms later (as a queued job
// would) and writes the output long after the call has returned.
// Task: examples/gelu. Expected verdict: incorrect (right after the call returns, the output
// still holds the poison). The late writes land in buffers the harness owns; they are the
// reason such a runner must be discarded after the verdict.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  std::thread([x, y, n] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i];
      y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
  }).detach();
  return 0;
}
