# Writes outside its scratch folder: it appends to its own problem file.
import torch
import torch.nn as nn

with open("@SELF@", "a") as f:
    f.write("# planted\n")


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
