// Must pass: explicit AVX2 intrinsics with a scalar tail. Row sums with four 8-lane float
// accumulators (32 columns per step), a horizontal add, and a scalar loop for the last
// cols % 32 columns; a plain scalar loop where AVX2 is not available. Summation order differs
// from the baseline's, within the task's sqrt(cols)-scaled tolerance.
// Task: examples/row_sum. Expected verdict: valid (SIMD intrinsics are no cause for alarm).
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kope/kernel.h"

namespace {
float RowSum(const float* x, int64_t cols) {
  int64_t c = 0;
  float sum = 0.0f;
#if defined(__AVX2__)
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  for (; c + 32 <= cols; c += 32) {
    acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(x + c));
    acc1 = _mm256_add_ps(acc1, _mm256_loadu_ps(x + c + 8));
    acc2 = _mm256_add_ps(acc2, _mm256_loadu_ps(x + c + 16));
    acc3 = _mm256_add_ps(acc3, _mm256_loadu_ps(x + c + 24));
  }
  const __m256 acc = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
  __m128 half = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  half = _mm_add_ps(half, _mm_movehl_ps(half, half));
  half = _mm_add_ss(half, _mm_shuffle_ps(half, half, 1));
  sum = _mm_cvtss_f32(half);
#endif
  for (; c < cols; ++c) sum += x[c];  // scalar tail (everything without AVX2)
  return sum;
}
}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (inputs[0].dtype != KOPE_F32 || outputs[0].dtype != KOPE_F32) return 2;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (outputs[0].shape[0] != rows) return 3;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) y[r] = RowSum(x + r * cols, cols);
  return 0;
}
