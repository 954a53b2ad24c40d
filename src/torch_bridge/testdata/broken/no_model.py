# Not a problem: it defines inputs but no Model class.
import torch

batch_size = 8
dim = 16


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
