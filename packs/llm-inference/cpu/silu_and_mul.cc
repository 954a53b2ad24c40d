// SwiGLU's gate: y = silu(gate) * up = gate / (1 + exp(-gate)) * up, f32, any shape (gate, up
// and y of one shape). Elements are shared among OpenMP threads in blocks of kBlock; each block
// is one vectorizable loop (the compiler's SIMD exp under -O3 -march=native -ffast-math-free
// code: expf in a simd loop).
#include <cmath>
#include <cstdint>

#include "kope/kernel.h"

constexpr int64_t kBlock = 4096;  // kope:tune 1024 4096 16384

namespace {

int64_t Elements(const kope_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

bool Contiguous(const kope_tensor& t) {
  if (t.dtype != KOPE_F32) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& g = inputs[0];
  const kope_tensor& u = inputs[1];
  kope_tensor& y = outputs[0];
  if (!Contiguous(g) || !Contiguous(u) || !Contiguous(y)) return 2;
  const int64_t n = Elements(g);
  if (Elements(u) != n || Elements(y) != n) return 3;
  const float* gate = static_cast<const float*>(g.data);
  const float* up = static_cast<const float*>(u.data);
  float* out = static_cast<float*>(y.data);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = b * kBlock + kBlock < n ? b * kBlock + kBlock : n;
#pragma omp simd
    for (int64_t i = b * kBlock; i < end; ++i) {
      out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    }
  }
  return 0;
}
