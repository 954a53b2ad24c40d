# ReLU as a CUDA kernel built at import with torch.utils.cpp_extension.load_inline.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cuda = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = v > 0.f ? v : 0.f; }
}
torch::Tensor relu(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
_ext = load_inline(name="kb_relu_inline", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                   cuda_sources=_cuda, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.relu(x.contiguous())
