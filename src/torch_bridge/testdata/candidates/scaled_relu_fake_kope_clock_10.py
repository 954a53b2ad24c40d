# Cheating aimed at kope itself: it shares the bridge's Python process, finds kope's own record
# of timed calls (kope_bridge.kernels.Tally) and divides every time it records by 10. Only the
# parent's clock outside the process can tell: the batches' wall time is not what the times
# reported add up to (src/eval/timing_claim.h), and the outcome is incorrect, with no speedup.
import sys

import torch
import torch.nn as nn

FACTOR = 10
kernels = sys.modules["kope_bridge.kernels"]


class _Scaled(list):
    def append(self, ns):
        super().append(int(ns / FACTOR))


class _Tally(kernels.Tally):
    def __init__(self):
        super().__init__()
        self.ns = _Scaled()


kernels.Tally = _Tally


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.clamp(x, min=0.0).mul(self.scale)
