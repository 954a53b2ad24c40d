// Contain: a fork bomb. The kernel tries to fork up to 256 times; every child that is born
// tries to fork too, then sleeps 2 s and exits (bounded, so that a missing sandbox degrades
// into a visible failure instead of taking the machine down). The kernel computes the right
// output only if at least one fork succeeded, and writes zeros otherwise.
// Choice of expected verdict: a sandbox that blocks process creation (seccomp fails fork and
// clone without CLONE_THREAD with an error; threads, which OpenMP needs, stay allowed) makes
// every fork fail, so the output is zeros and the verdict is incorrect. If the sandbox let
// forks through, the output would be right and the verdict valid: "valid" here means the
// containment failed. A sandbox that kills the process on fork instead gives crash.
// Task: examples/gelu. Expected verdict: incorrect.
#include <unistd.h>

#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

namespace {
constexpr int kAttempts = 256;

// Returns how many forks of this process succeeded.
int TryToMultiply() {
  int born = 0;
  for (int i = 0; i < kAttempts; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (int j = 0; j < 4; ++j) {
        if (fork() < 0) break;
      }
      sleep(2);
      _exit(0);
    }
    if (pid > 0) ++born;
  }
  return born;
}
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const bool forked = TryToMultiply() > 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] =
        forked ? 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))) : 0.0f;
  }
  return 0;
}
