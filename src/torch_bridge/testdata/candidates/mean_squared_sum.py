# Wrong: the sum of squares, not their mean (a scalar output that is checked like any other).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ((predictions - targets) ** 2).sum()
