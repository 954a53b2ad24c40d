# Correct: the masked elements replaced by zeros, then the row sums.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        return torch.where(mask, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum(dim=1)
