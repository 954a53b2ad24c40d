// Legitimate: several blocks per row combine their partial sums with atomicAdd, so the
// order of the additions (and the last bits of the result) changes from run to run.
// Task: row_sum_small. Expected verdict: valid (runs agree within the tolerance).
#include <cstdint>

#include "kope/kernel.h"

__global__ void Zero(float* y, int64_t rows) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r < rows) y[r] = 0.f;
}

__global__ void AtomicSum(const float* __restrict__ x, float* y, int64_t cols) {
  const int64_t r = blockIdx.x;
  const int64_t part = (cols + gridDim.y - 1) / gridDim.y;
  const int64_t begin = blockIdx.y * part;
  const int64_t end = begin + part < cols ? begin + part : cols;
  float v = 0.f;
  for (int64_t c = begin + threadIdx.x; c < end; c += blockDim.x) v += x[r * cols + c];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) atomicAdd(y + r, v);
}

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int,
                           void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  Zero<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(
      static_cast<float*>(outputs[0].data), rows);
  AtomicSum<<<dim3(static_cast<unsigned>(rows), 8), 128, 0, s>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
