# Reads a file outside its scratch folder (the test plants it at @SECRET@).
import torch
import torch.nn as nn

SECRET = open("@SECRET@").read()


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
