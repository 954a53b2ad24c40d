# Right values, and about 2 ms of GPU work on a stream of its own that the harness's stream never
# waits for: timed by events on the current stream alone, the call would take what the relu
# takes (a speedup near 1x). kope synchronizes the whole device before each end event, so the
# hidden work is charged: a speedup far below 1x.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.side = None

    def forward(self, x):
        if self.side is None:
            self.side = torch.cuda.Stream()
        with torch.cuda.stream(self.side):  # no wait_stream either way
            torch.cuda._sleep(4_000_000)  # clock cycles: about 2 ms
        return torch.relu(x) * self.scale
