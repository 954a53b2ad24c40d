// A data race: several blocks per row each add their partial sum into y[r] with a plain
// read-modify-write, so updates are lost depending on timing.
// Task: row_sum_small. Expected verdict: incorrect.
#include <cstdint>

#include "kope/kernel.h"

__global__ void Zero(float* y, int64_t rows) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r < rows) y[r] = 0.f;
}

__global__ void RacySum(const float* x, float* y, int64_t cols) {
  // blockIdx.y splits the row into 8 parts; thread 0 of each block adds its part.
  const int64_t r = blockIdx.x;
  const int64_t part = (cols + gridDim.y - 1) / gridDim.y;
  const int64_t begin = blockIdx.y * part;
  const int64_t end = begin + part < cols ? begin + part : cols;
  __shared__ float s[128];
  float v = 0.f;
  for (int64_t c = begin + threadIdx.x; c < end; c += blockDim.x) v += x[r * cols + c];
  s[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.f;
    for (int i = 0; i < 128; ++i) t += s[i];
    volatile float* out = y + r;
    const float old = *out;
    for (int spin = 0; spin < 1000; ++spin) __threadfence();  // widen the window
    *out = old + t;
  }
}

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int,
                           void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  Zero<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(
      static_cast<float*>(outputs[0].data), rows);
  RacySum<<<dim3(static_cast<unsigned>(rows), 8), 128, 0, s>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
