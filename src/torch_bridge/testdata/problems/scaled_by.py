# A Python number as a forward argument: each element times s.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, s: float) -> torch.Tensor:
        return x * s


n = 5000


def get_inputs():
    return [torch.randn(n), 2.5]


def get_init_inputs():
    return []
