"""Tests of loading a KernelBench-format problem at chosen sizes (problem.py). Run by ctest:
python3 -m unittest kope_bridge.problem_test."""
import unittest

from . import problem

# As KernelBench level 2 writes them: a shape derived from a size, a chained assignment, a size
# the file changes after assigning it.
SOURCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, out_channels, bias_shape):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return x + self.bias

batch_size = 16
out_channels = 64
height = width = 32
depth, frames = 6, 2
bias_shape = (out_channels, 1, 1)
steps: int = 4
steps += 1
label = "sizes"

def get_inputs():
    return [torch.rand(batch_size, out_channels, height, width)]

def get_init_inputs():
    return [out_channels, bias_shape]
"""


class LoadModuleTest(unittest.TestCase):
    def test_the_files_own_values_without_overrides(self):
        m = problem.load_module(SOURCE, "problem.py")
        self.assertEqual((m.out_channels, m.height, m.width, m.bias_shape, m.steps),
                         (64, 32, 32, (64, 1, 1), 5))
        self.assertEqual(problem.int_globals(SOURCE),
                         {"batch_size": 16, "out_channels": 64, "height": 32, "width": 32,
                          "depth": 6, "frames": 2, "steps": 5})

    def test_what_the_file_derives_from_a_size_follows_it(self):
        m = problem.load_module(SOURCE, "problem.py", {"out_channels": 3, "batch_size": 2})
        self.assertEqual(m.bias_shape, (3, 1, 1))
        model = problem.build_model(m)
        x = m.get_inputs()[0]
        self.assertEqual(list(x.shape), [2, 3, 32, 32])
        self.assertEqual(list(model(x).shape), [2, 3, 32, 32])

    def test_a_chained_assignment_gives_each_name_its_own_value(self):
        m = problem.load_module(SOURCE, "problem.py", {"height": 5})
        self.assertEqual((m.height, m.width), (5, 32))
        m = problem.load_module(SOURCE, "problem.py", {"height": 5, "width": 7})
        self.assertEqual((m.height, m.width), (5, 7))

    def test_names_assigned_as_a_tuple_are_sizes_of_their_own(self):
        m = problem.load_module(SOURCE, "problem.py", {"depth": 3})
        self.assertEqual((m.depth, m.frames), (3, 2))

    def test_an_override_holds_whatever_the_file_does_to_the_name_later(self):
        m = problem.load_module(SOURCE, "problem.py", {"steps": 9})
        self.assertEqual(m.steps, 9)  # not 10: `steps += 1` ran on 9, then 9 was set again
        self.assertEqual(m.label, "sizes")


if __name__ == "__main__":
    unittest.main()
