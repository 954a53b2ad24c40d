# Aliasing: relu and scale in place on the input, which is returned as the output.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x.relu_()
        x.mul_(self.scale)
        return x
