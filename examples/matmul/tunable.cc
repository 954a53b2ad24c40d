// Matrix product, a seed for kope's tuner (docs/WORKFLOW.md): i-k-j order, so the innermost
// loop runs along rows of B and C and vectorizes; k and j are blocked by kTileK and kTileJ so
// that the B block in use stays in cache; rows of C are shared among kThreads OpenMP threads.
#include <cstdint>

#include "kope/kernel.h"

constexpr int kTileJ = 16;   // kope:tune 16 32 64 128 256
constexpr int kTileK = 16;   // kope:tune 16 32 64 128 256
constexpr int kThreads = 1;  // kope:tune 1 2 4

namespace {

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 2) return false;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kope_tensor& a = inputs[0];
  const kope_tensor& b = inputs[1];
  kope_tensor& c = outputs[0];
  if (!IsContiguousF32(a) || !IsContiguousF32(b) || !IsContiguousF32(c)) return 2;
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (b.shape[0] != k || c.shape[0] != m || c.shape[1] != n) return 3;
  const float* pa = static_cast<const float*>(a.data);
  const float* pb = static_cast<const float*>(b.data);
  float* pc = static_cast<float*>(c.data);
#pragma omp parallel for num_threads(kThreads) schedule(static) if (m > 1)
  for (int64_t i = 0; i < m; ++i) {
    float* crow = pc + i * n;
    for (int64_t j = 0; j < n; ++j) crow[j] = 0.0f;
    for (int64_t kk = 0; kk < k; kk += kTileK) {
      const int64_t k_end = kk + kTileK < k ? kk + kTileK : k;
      for (int64_t jj = 0; jj < n; jj += kTileJ) {
        const int64_t j_end = jj + kTileJ < n ? jj + kTileJ : n;
        for (int64_t p = kk; p < k_end; ++p) {
          const float av = pa[i * k + p];
          const float* brow = pb + p * n;
#pragma omp simd
          for (int64_t j = jj; j < j_end; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
  return 0;
}
