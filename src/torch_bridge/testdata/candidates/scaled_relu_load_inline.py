# A C++ extension built as the candidate is imported (torch.utils.cpp_extension.load_inline, as
# many KernelBench solutions are written): ninja and the host compiler inside the sandbox.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <torch/extension.h>
#include <algorithm>

torch::Tensor scaled_relu(torch::Tensor x, double scale) {
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  const float* in = xc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  const float s = static_cast<float>(scale);
  for (int64_t i = 0; i < xc.numel(); ++i) o[i] = std::max(in[i], 0.0f) * s;
  return out;
}
"""

extension = load_inline(name="kope_test_scaled_relu", cpp_sources=SOURCE,
                        functions=["scaled_relu"])


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return extension.scaled_relu(x, self.scale)
