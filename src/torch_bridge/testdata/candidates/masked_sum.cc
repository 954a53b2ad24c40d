// Correct: the row sums of the elements whose mask byte is 1, accumulated in double.
#include <cstdint>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int, void*) {
  if (n_in != 2 || in[1].dtype != KOPE_BOOL) return 1;
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float* x = static_cast<const float*>(in[0].data);
  const uint8_t* mask = static_cast<const uint8_t*>(in[1].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) {
      if (mask[r * in[1].strides[0] + c] != 0) s += x[r * in[0].strides[0] + c];
    }
    y[r] = static_cast<float>(s);
  }
  return 0;
}
