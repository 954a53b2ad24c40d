# Cheating on a GPU: replaces torch.cuda.Event's elapsed_time at import to report a 10th of
# the time, and torch.cuda.synchronize with nothing (a harness that times with torch's events
# reports a 10x speedup). kope's events and synchronize are PyTorch's C methods, taken
# before any candidate code ran (kope_bridge/clock.py): the patches change nothing.
import torch
import torch.nn as nn

FACTOR = 10
_elapsed = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _elapsed(self, end) / FACTOR
torch.cuda.synchronize = lambda device=None: None


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.clamp(x, min=0.0).mul(self.scale)
