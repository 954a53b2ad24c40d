"""An input's distribution (include/kope/task/task.h) drawn on the reference runner's device
with torch's generator (checker.py's DRAW), as src/eval/inputs.cc draws it on the host."""
import math

import torch

# Values drawn at once where a law is drawn through float64 (temporaries of 256 MiB).
CHUNK = 1 << 25


class Distribution:
    """An input's distribution (include/kope/task/task.h), drawn with torch's generator."""

    def __init__(self, kind, mean, stddev, low, high, low_exp, high_exp, num_distinct):
        self.kind, self.mean, self.stddev, self.low, self.high = kind, mean, stddev, low, high
        self.low_exp, self.high_exp, self.num_distinct = low_exp, high_exp, num_distinct

    def values(self, n, dtype, generator, device):
        """n values for a tensor of `dtype` (float64, or int64 for integer dtypes)."""
        if not (dtype.is_floating_point or dtype.is_complex):
            lo, hi = math.floor(self.low), math.ceil(self.high)
            if hi <= lo:
                lo, hi = 0, 100
            return torch.randint(lo, hi, (n,), generator=generator, device=device)
        f64 = {"dtype": torch.float64, "generator": generator, "device": device}
        if self.kind == 0:  # normal
            return torch.randn(n, **f64).mul_(self.stddev).add_(self.mean)
        if self.kind in (1, 5):  # uniform, positive
            return torch.rand(n, **f64).mul_(self.high - self.low).add_(self.low)
        if self.kind == 2:  # wide: sign * 10^u
            e = torch.rand(n, **f64).mul_(self.high_exp - self.low_exp).add_(self.low_exp)
            sign = torch.where(torch.rand(n, **f64) < 0.5, -1.0, 1.0)
            return torch.pow(10.0, e).mul_(sign)
        if self.kind == 3:  # negative
            return torch.randn(n, **f64).mul_(self.stddev).abs_().neg_().sub_(1e-3)
        k = max(1, self.num_distinct)  # ties: a few values, exact in every float type
        pick = torch.randint(0, k, (n,), generator=generator, device=device)
        return (pick - k // 2).to(torch.float64).mul_(0.5)

    def fill(self, t, generator):
        """Draws every element of the 1-D tensor t: in place and in t's own dtype where torch
        can (normal, uniform and positive floating-point inputs: one pass over t), else through
        values() in float64 chunks."""
        if t.dtype.is_floating_point and self.kind == 0:
            t.normal_(self.mean, self.stddev, generator=generator)
            return
        if t.dtype.is_floating_point and self.kind in (1, 5) and self.high > self.low:
            t.uniform_(self.low, self.high, generator=generator)
            return
        for start in range(0, t.numel(), CHUNK):
            chunk = t[start:start + CHUNK]
            chunk.copy_(self.values(chunk.numel(), chunk.dtype, generator, t.device))
