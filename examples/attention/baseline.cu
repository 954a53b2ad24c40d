// Multi-head scaled dot-product attention, no mask, one thread per query row: scores in double,
// softmax in double, P V accumulated in double (D <= 256). The code to beat and the reference on
// the GPU. Q, K, V and O are [B, H, S, D].
#include <cstdint>

#include "kope/kernel.h"

namespace {

constexpr int kMaxD = 256;

bool IsContiguousF32(const kope_tensor& t) {
  if (t.dtype != KOPE_F32 || t.ndim != 4) return false;
  int64_t expected = 1;
  for (int d = 3; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

__global__ void Attention(const float* q, const float* k, const float* v, float* o, int64_t heads,
                          int64_t s, int64_t d) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (row >= heads * s) return;
  const int64_t head = row / s;
  const float* qi = q + row * d;
  const float* kh = k + head * s * d;
  const float* vh = v + head * s * d;
  const double scale = 1.0 / sqrt(static_cast<double>(d));
  double m = -1e300;
  for (int64_t j = 0; j < s; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < d; ++e) dot += static_cast<double>(qi[e]) * kh[j * d + e];
    m = fmax(m, dot * scale);
  }
  double acc[kMaxD];
  for (int64_t e = 0; e < d; ++e) acc[e] = 0;
  double sum = 0;
  for (int64_t j = 0; j < s; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < d; ++e) dot += static_cast<double>(qi[e]) * kh[j * d + e];
    const double p = exp(dot * scale - m);
    sum += p;
    for (int64_t e = 0; e < d; ++e) acc[e] += p * vh[j * d + e];
  }
  for (int64_t e = 0; e < d; ++e) o[row * d + e] = static_cast<float>(acc[e] / sum);
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                           int n_outputs, void* stream) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  for (int i = 0; i < 3; ++i) {
    if (!IsContiguousF32(inputs[i])) return 2;
    for (int dim = 0; dim < 4; ++dim) {
      if (inputs[i].shape[dim] != inputs[0].shape[dim]) return 3;
    }
  }
  if (!IsContiguousF32(outputs[0])) return 2;
  const int64_t b = inputs[0].shape[0], h = inputs[0].shape[1], s = inputs[0].shape[2],
                d = inputs[0].shape[3];
  if (d > kMaxD) return 5;
  const int64_t rows = b * h * s;
  Attention<<<static_cast<unsigned>((rows + 63) / 64), 64, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<const float*>(inputs[2].data), static_cast<float*>(outputs[0].data), b * h, s, d);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
