# Falls back to PyTorch's own relu: valid where the task allows PyTorch operations, a runtime
# error where it forbids them.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale
