# Forks a child that outlives the import unless the sandbox ends it with the importer.
import os
import time

import torch
import torch.nn as nn

if os.fork() == 0:
    os.setsid()
    time.sleep(3600)
    os._exit(0)


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
