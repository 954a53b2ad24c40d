# Reads an API key from the environment of the process that imports it.
import os

import torch
import torch.nn as nn

KEY = os.environ["KOPE_HOSTILE_TEST_API_KEY"]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
