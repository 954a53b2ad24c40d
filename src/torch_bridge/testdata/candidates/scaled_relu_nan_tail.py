# Wrong: a NaN where the reference has a number (the second half of the last row), as a kernel
# that reads past its input would produce. Checked in the reference runner, the verdict and its
# reason (nan_inf) must be those the parent's own comparison gives a native kernel.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = torch.relu(x) * self.scale
        out[-1, out.shape[1] // 2:] = float("nan")
        return out
