// Timing cheat: computes during the first call for a given size (the warm-up) and keeps a
// copy; every later call of that size copies the saved result out instead of computing, so
// the timed calls measure a memcpy.
// Task: examples/gelu. Expected verdict: incorrect (any later call with fresh inputs gets the
// stale copy: the second trial of each size, and the check after the timing loop).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "kope/kernel.h"

namespace {
std::map<int64_t, std::vector<float>> g_saved;  // by element count
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  float* y = static_cast<float*>(outputs[0].data);
  auto saved = g_saved.find(n);
  if (saved != g_saved.end()) {
    std::memcpy(y, saved->second.data(), static_cast<size_t>(n) * sizeof(float));
    return 0;
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  g_saved.emplace(n, std::vector<float>(y, y + n));
  return 0;
}
