# A problem that checks its input as real code may: an input of zeros only is refused. Timing
# must then call every process (eager, torch.compile, the candidate) on drawn inputs, which the
# evaluator may draw in the runners themselves.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "meta" and not bool(x.ne(0).any()):  # kope imports on meta
            raise ValueError("an input of zeros only: the input was never drawn")
        return torch.tanh(x) * 2.0


batch_size = 32
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
