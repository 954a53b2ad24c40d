# A broken problem: its output never depends on its input (every element is zero). kope refuses
# it, since no candidate could be told right from wrong (bridge_test.cc).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (torch.sum(x, dim=1) * 0.0).abs()  # +0.0 everywhere, never -0.0


batch_size = 64
dim = 100


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
