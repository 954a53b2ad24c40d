"""What the parent's clock sees per timed call beyond the bridge's own timer, on the CPU: a
timed loop's wall time per call less its reported time per call (the per-call share of what
src/eval/timing_claim.cc calls unexplained), for the in-place ReLU problem's eager baseline
and an out-of-place ModelNew, in microseconds. Two loops: TorchKernel.timed_calls, which
releases each call's results inside its timed region, and `released_between`, the same loop
releasing them before the next call, outside the timer. `release` is what dropping one call's
results takes, timed alone.

    PYTHONPATH=python python3 bench/kernelbench/timed_loop_gap.py [calls] [rounds]
"""
import gc
import statistics
import sys

import torch

from kope_bridge import clock
from kope_bridge.kernels import Tally, TorchKernel

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu_(x)

batch_size = 64
dim = 300

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""

CANDIDATE = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
"""


def kernel(mode):
    spec = {"mode": mode, "problem": PROBLEM, "n_forward_inputs": 1, "parameters": [],
            "size_sets": [{"label": "bench", "globals": {}, "shapes": [[64, 300]]}]}
    if mode == "modelnew":
        spec["candidate"] = CANDIDATE
    return TorchKernel(spec, "cpu")


def released_between(k, prepared, calls, tally):
    """timed_calls' CPU loop with each call's results released outside the timer."""
    results = None
    for _ in range(calls):
        results = None  # noqa: F841
        start = clock.now_ns()
        results = k.call(prepared[0])
        tally.ns.append(clock.now_ns() - start)


def timed_calls(k, prepared, calls, tally):
    k.timed_calls(prepared, calls, None, 0, lambda i, r: None, tally)


def batch_gap(loop, k, prepared, calls):
    """(wall per call, reported per call) of one batch of `loop`, in us."""
    tally = Tally()
    start = clock.now_ns()
    loop(k, prepared, calls, tally)
    wall = clock.now_ns() - start
    return wall / calls / 1e3, sum(tally.ns) / calls / 1e3


def drop_cost(k, prepared, calls):
    """The mean time of `results = None` after a call (the previous call's outputs freed), us."""
    total = 0
    for _ in range(calls):
        results = k.call(prepared[0])
        start = clock.now_ns()
        results = None  # noqa: F841
        total += clock.now_ns() - start
    return total / calls / 1e3


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.set_grad_enabled(False)
    arena = torch.zeros(64 * 300 * 4 * 2, dtype=torch.uint8)  # inputs as arena views
    x = arena[:64 * 300 * 4].view(torch.float32).view(64, 300)
    x.copy_(torch.randn(64, 300))
    print(f"{'loop':17} {'side':9} {'wall/call':>10} {'timed/call':>10} {'gap/call':>9} "
          f"{'release':>8} {'gc':>4}")
    kernels = {mode: kernel(mode) for mode in ("eager", "modelnew")}
    for name, loop in (("released_between", released_between), ("timed_calls", timed_calls)):
        for mode, k in kernels.items():
            prepared = [k.prepare([x])]
            batch_gap(loop, k, prepared, calls)  # warm
            gaps, walls, timed = [], [], []
            gc0 = gc.get_stats()[0]["collections"]
            for _ in range(rounds):
                wall, rep = batch_gap(loop, k, prepared, calls)
                walls.append(wall)
                timed.append(rep)
                gaps.append(wall - rep)
            collections = (gc.get_stats()[0]["collections"] - gc0) / rounds
            drop = drop_cost(k, prepared, calls)
            print(f"{name:17} {mode:9} {statistics.median(walls):10.2f} "
                  f"{statistics.median(timed):10.2f} {statistics.median(gaps):9.2f} "
                  f"{drop:8.2f} {collections:4.0f}")


if __name__ == "__main__":
    main()
