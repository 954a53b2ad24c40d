# A reference that writes its input in place (torch.relu_) and returns it: kope must not take the
# reference's own write for the candidate's.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu_(x)


batch_size = 64
dim = 300


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
