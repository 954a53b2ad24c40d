# A problem whose calls at its file's sizes take 0.3 s (a large problem on a slow machine), and
# are fast at every smaller size: a candidate's time limit must follow its reference's.
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() >= 1024:  # the file's sizes: 16 x 64
            time.sleep(0.3)
        return x * 2.0


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
