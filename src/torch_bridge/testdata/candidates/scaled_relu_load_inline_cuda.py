# A CUDA extension built as the candidate is imported (torch.utils.cpp_extension.load_inline with
# cuda_sources, as many KernelBench solutions are written): ninja, the host compiler and nvcc
# inside the sandbox; the kernel runs on the current stream.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scaled_relu_kernel(const float* __restrict__ in, float* __restrict__ out,
                                   float scale, long n) {
  long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(in[i], 0.0f) * scale;
}

torch::Tensor scaled_relu(torch::Tensor x, double scale) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "a float32 CUDA tensor");
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  const long n = xc.numel();
  if (n > 0) {
    scaled_relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), static_cast<float>(scale), n);
  }
  return out;
}
"""

extension = load_inline(name="kope_test_scaled_relu_cuda",
                        cpp_sources="torch::Tensor scaled_relu(torch::Tensor x, double scale);",
                        cuda_sources=CUDA_SOURCE, functions=["scaled_relu"])


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return extension.scaled_relu(x, self.scale)
