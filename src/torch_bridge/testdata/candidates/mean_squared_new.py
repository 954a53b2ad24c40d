# Correct: the same loss as a dot product of the difference with itself.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        d = (predictions - targets).flatten()
        return torch.dot(d, d) / d.numel()
