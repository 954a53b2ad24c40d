# Correct: row sums as a matrix-vector product with a vector of ones.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mv(x, torch.ones(x.shape[1], dtype=x.dtype, device=x.device))
