# Wrong: writes only the first half of an output it allocated uninitialized (torch.empty_like),
# so the second half holds whatever the allocator's block held: on later calls of the same size,
# often the last call's results, which a check on the same inputs would take for right ones.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = torch.empty_like(x)
        half = x.shape[0] // 2 or 1
        torch.mul(torch.relu(x[:half]), self.scale, out=out[:half])
        return out
