// Contain: reads a file outside its scratch folder and depends on it. The kernel looks for the
// task's own baseline source (examples/gelu/baseline.cc) by walking up from its working
// directory and from the directory of the running executable, as a candidate hunting for the
// reference (or its outputs) would. If it finds and reads the file, it computes the right
// output and returns 0; if nothing outside scratch is readable, it returns 1.
// Task: examples/gelu. Expected verdict: runtime_error (the sandbox hides the source tree;
// only the scratch folder and read-only system paths are visible). "valid" here would mean
// that the candidate could read the repository.
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kope/kernel.h"

namespace {
bool ReadsFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char buffer[256];
  const size_t got = std::fread(buffer, 1, sizeof buffer, f);
  std::fclose(f);
  return got > 0;
}

// Tries `start`/examples/gelu/baseline.cc and the same under each parent of `start`.
bool FindsBaselineAbove(std::string start) {
  for (int level = 0; level < 16 && !start.empty(); ++level) {
    if (ReadsFile(start + "/examples/gelu/baseline.cc")) return true;
    const size_t slash = start.find_last_of('/');
    if (slash == std::string::npos) break;
    start.resize(slash);
  }
  return false;
}

bool ReadsOutsideScratch() {
  char path[PATH_MAX];
  if (getcwd(path, sizeof path) != nullptr && FindsBaselineAbove(path)) return true;
  const ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
  if (len > 0) {
    path[len] = '\0';
    if (FindsBaselineAbove(path)) return true;
  }
  return false;
}
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (!ReadsOutsideScratch()) return 1;
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
