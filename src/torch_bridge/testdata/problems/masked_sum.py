# A bool input: the sum of each row's elements where the mask is true.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.sum(x * mask, dim=1)


batch_size = 48
dim = 700


def get_inputs():
    x = torch.randn(batch_size, dim)
    mask = torch.randint(0, 2, (batch_size, dim)).bool()
    return [x, mask]


def get_init_inputs():
    return []
