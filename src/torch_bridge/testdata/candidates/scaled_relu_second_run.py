# Wrong on a second run on the same inputs (as a race that shows only sometimes): each trial's
# two calls on the same inputs at the check sizes disagree.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.last = None

    def forward(self, x):
        out = torch.relu(x) * self.scale
        if self.last is not None and self.last.shape == x.shape and torch.equal(self.last, x):
            out[(0,) * out.dim()] += 1.0
        self.last = x.clone()
        return out
