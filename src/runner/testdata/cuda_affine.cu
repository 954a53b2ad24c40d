// y = a * x + b on the GPU (a, b from -DA=, -DB=); -DSCRIBBLE writes one element past y;
// -DWILD writes through a wild pointer; -DHANG never finishes; -DSIDE works on a private
// stream without synchronizing.
#include <cstdint>

#include "kope/kernel.h"

#ifndef A
#define A 2.0f
#endif
#ifndef B
#define B 1.0f
#endif

__global__ void Affine(const float* x, float* y, int64_t n, volatile int* hang) {
#ifdef HANG
  while (*hang == 0) {
  }
#endif
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = A * x[i] + B;
#ifdef SCRIBBLE
  if (i == 0) y[n] = 42.0f;
#endif
}

extern "C" int kope_kernel(const kope_tensor* in, int, kope_tensor* out, int, void* stream) {
  const int64_t n = in[0].shape[0];
  cudaStream_t s = static_cast<cudaStream_t>(stream);
#ifdef SIDE
  static cudaStream_t side = nullptr;
  if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  s = side;
#endif
  float* y = static_cast<float*>(out[0].data);
#ifdef WILD
  y = reinterpret_cast<float*>(0x10);
#endif
  static int* zero = nullptr;
  if (zero == nullptr && cudaMalloc(&zero, sizeof(int)) == cudaSuccess) cudaMemset(zero, 0, 4);
  Affine<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
      static_cast<const float*>(in[0].data), y, n, zero);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
