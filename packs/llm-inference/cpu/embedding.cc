// Embedding gather: y[..., :] = table[ids[...], :], f32 rows of an i64-indexed table
// (ids [...], table [vocab, d], y [..., d]); an id outside [0, vocab) fails the call. Tokens are
// shared among OpenMP threads (kThreads); each row is one SIMD copy.
#include <cstdint>

#include "kope/kernel.h"

// One thread streams at the memory bandwidth of a small machine; more help where one core
// cannot.
constexpr int kThreads = 1;  // kope:tune 1 2 4

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& ids = inputs[0];
  const kope_tensor& table = inputs[1];
  if (ids.dtype != KOPE_I64 || table.dtype != KOPE_F32 || table.ndim != 2) return 2;
  const int64_t vocab = table.shape[0], d = table.shape[1];
  int64_t tokens = 1;
  for (int k = 0; k < ids.ndim; ++k) tokens *= ids.shape[k];
  const int64_t* id = static_cast<const int64_t*>(ids.data);
  const float* rows = static_cast<const float*>(table.data);
  float* out = static_cast<float*>(outputs[0].data);
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) num_threads(kThreads) if (kThreads > 1)
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t v = id[t];
    if (v < 0 || v >= vocab) {
      bad = 1;
      continue;
    }
    const float* src = rows + v * d;
    float* dst = out + t * d;
#pragma omp simd
    for (int64_t c = 0; c < d; ++c) dst[c] = src[c];
  }
  return bad ? 3 : 0;
}
