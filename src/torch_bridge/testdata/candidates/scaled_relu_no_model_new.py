# Parses but defines no ModelNew (the class has another name).
import torch
import torch.nn as nn


class FastModel(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale
