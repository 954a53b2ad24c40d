// For timing tests: out[0] = the number of calls so far (this one included),
// out[1] = x[0] * 2. Returns 5 on call number params[0] (0: never).
#include "kope/kernel.h"

static int64_t calls = 0;

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void*) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const int64_t fail_at = static_cast<const int64_t*>(inputs[1].data)[0];
  float* out = static_cast<float*>(outputs[0].data);
  ++calls;
  out[0] = static_cast<float>(calls);
  out[1] = x[0] * 2.0f;
  return calls == fail_at ? 5 : 0;
}
