"""What a module's parameters cost an eager call timed by the bridge: TorchKernel.timed_calls'
median time per call (the timed region the eager baseline and a ModelNew candidate are
measured in) for small modules with parameters, on the CPU, in microseconds. Run it with the
bridge's Python to compare two versions of kernels.py side by side.

    PYTHONPATH=python python3 bench/kernelbench/parameter_cost.py
"""
import statistics

import torch

from kope_bridge.kernels import Tally, TorchKernel

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        if kind == "linear":
            self.body = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64))
        elif kind == "groupnorm":
            self.body = nn.GroupNorm(8, 64)
        else:
            self.body = nn.Conv2d(16, 16, 3)

    def forward(self, x):
        return self.body(x)

kind = "linear"

def get_inputs():
    return [torch.rand(2, 64)]

def get_init_inputs():
    return [kind]
"""

CASES = {"linear": [2, 64], "groupnorm": [2, 64, 4, 4], "conv": [1, 16, 8, 8]}


def main():
    torch.set_grad_enabled(False)
    torch.set_num_threads(1)
    for kind, shape in CASES.items():
        namespace = {}
        exec(PROBLEM, namespace)  # the module's parameters: the task's extra inputs
        model = namespace["Model"](kind)
        names = [n for n, _ in model.named_parameters()]
        shapes = [shape] + [list(p.shape) for _, p in model.named_parameters()]
        kernel = TorchKernel({"mode": "eager", "problem": PROBLEM, "n_forward_inputs": 1,
                              "parameters": names, "size_sets": [
                                  {"label": "bench", "globals": {"kind": kind},
                                   "shapes": shapes}]}, "cpu")
        inputs = [torch.rand(s) for s in shapes]
        prepared = [kernel.prepare(inputs)]
        medians = []
        for _ in range(5):
            tally = Tally()
            kernel.timed_calls(prepared, 2000, None, 0, lambda k, results: None, tally)
            medians.append(statistics.median(tally.ns) / 1e3)
        print(f"{kind:10s} {len(names)} parameters: {min(medians):7.1f} us per call "
              f"(best median of 5 x 2000 calls)")


if __name__ == "__main__":
    main()
