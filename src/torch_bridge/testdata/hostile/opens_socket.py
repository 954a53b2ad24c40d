# Connects to a port on the loopback interface (the test listens there).
import socket

import torch
import torch.nn as nn

socket.create_connection(("127.0.0.1", @PORT@), timeout=5).close()


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
