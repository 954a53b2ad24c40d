"""Tests of TorchKernel's choice of a model for a call's size set. Run by ctest:
python3 -m unittest kope_bridge.kernels_test."""
import os
import unittest
import unittest.mock
import weakref

os.environ["TRITON_INTERPRET"] = "1"  # a Triton candidate on the CPU: before it is defined

import torch  # noqa: E402

from . import kernels
from .kernels import TorchKernel

# get_inputs() refuses the meta device: a call's size set must be found without it.
PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale

n = 4
scale = 1

def get_inputs():
    if torch.empty(0).device.type == "meta":
        raise RuntimeError("get_inputs on the meta device")
    return [torch.rand(n)]

def get_init_inputs():
    return [scale]
"""


def spec(with_shapes):
    sets = [{"label": "check[0]", "globals": {"n": 4, "scale": 2}, "shapes": [[4]]},
            {"label": "bench", "globals": {"n": 8, "scale": 3}, "shapes": [[8]]}]
    if not with_shapes:
        for s in sets:
            del s["shapes"]
    return {"mode": "eager", "problem": PROBLEM, "n_forward_inputs": 1, "parameters": [],
            "size_sets": sets}


# Two size sets with the same forward input and different parameters (as KernelBench level 2's
# 58 and 60 in out_channels); the forward also scales by the size.
WITH_PARAMETERS = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n, out):
        super().__init__()
        self.lin = nn.Linear(n, out)
        self.out = out

    def forward(self, x):
        return self.lin(x) * self.out

n = 4
out = 2

def get_inputs():
    return [torch.rand(n)]

def get_init_inputs():
    return [n, out]
"""


class SizeSetTest(unittest.TestCase):
    def test_sets_that_differ_in_their_parameters_only_are_told_apart(self):
        sets = [{"label": "check[0]", "globals": {"n": 4, "out": 2},
                 "shapes": [[4], [2, 4], [2]]},
                {"label": "check[1]", "globals": {"n": 4, "out": 3},
                 "shapes": [[4], [3, 4], [3]]}]
        kernel = TorchKernel({"mode": "eager", "problem": WITH_PARAMETERS, "n_forward_inputs": 1,
                              "parameters": ["lin.weight", "lin.bias"], "size_sets": sets},
                             "cpu")
        out = kernel.run([torch.ones(4), torch.ones(3, 4), torch.zeros(3)])
        self.assertTrue(torch.equal(out[0], torch.full((3,), 12.0)))  # 4 * out = 3
        out = kernel.run([torch.ones(4), torch.ones(2, 4), torch.zeros(2)])
        self.assertTrue(torch.equal(out[0], torch.full((2,), 8.0)))  # 4 * out = 2

    def test_a_calls_size_set_is_found_by_the_shapes_the_spec_gives(self):
        kernel = TorchKernel(spec(with_shapes=True), "cpu")
        out = kernel.run([torch.ones(8)])
        self.assertTrue(torch.equal(out[0], torch.full((8,), 3.0)))  # the bench set's model
        out = kernel.run([torch.ones(4)])
        self.assertTrue(torch.equal(out[0], torch.full((4,), 2.0)))

    def test_the_model_built_at_load_serves_the_first_sets_calls(self):
        kernel = TorchKernel(spec(with_shapes=True), "cpu")
        built = []
        module = kernel._module
        kernel._module = lambda globals_: built.append(globals_) or module(globals_)
        kernel.run([torch.ones(4)])
        self.assertEqual(built, [])
        kernel.run([torch.ones(8)])
        self.assertEqual(built, [{"n": 8, "scale": 3}])

    def test_without_shapes_the_problem_is_asked_on_the_meta_device(self):
        kernel = TorchKernel(spec(with_shapes=False), "cpu")
        with self.assertRaisesRegex(RuntimeError, "meta device"):
            kernel.run([torch.ones(8)])

    def test_shapes_of_no_size_set_are_refused(self):
        kernel = TorchKernel(spec(with_shapes=True), "cpu")
        with self.assertRaisesRegex(Exception, "no size set"):
            kernel.run([torch.ones(5)])


# A Python number as a forward argument ([torch] scalars): a one-element input in the arena.
SCALED_BY = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, s):
        if not isinstance(s, float):
            raise TypeError(f"s is a {type(s).__name__}")
        return x * s

n = 4

def get_inputs():
    return [torch.rand(n), 2.5]

def get_init_inputs():
    return []
"""


def scaled_by_spec(mode):
    return {"mode": mode, "problem": SCALED_BY, "n_forward_inputs": 2, "parameters": [],
            "scalars": [1], "size_sets": [{"label": "bench", "globals": {"n": 4},
                                           "shapes": [[4], [1]]}]}


class ScalarTest(unittest.TestCase):
    def test_a_scalar_reaches_forward_as_a_python_number(self):
        kernel = TorchKernel(scaled_by_spec("eager"), "cpu")
        x = torch.arange(4, dtype=torch.float32)
        s = torch.tensor([1.5], dtype=torch.float64)
        self.assertTrue(torch.equal(kernel.run([x, s])[0], x * 1.5))
        fn, params, forward_inputs = kernel.prepare([x, s])
        self.assertEqual(forward_inputs[1], 1.5)
        self.assertIsInstance(forward_inputs[1], float)

    def test_torch_compile_sees_two_values_before_the_first_call(self):
        torch._dynamo.reset()
        kernel = TorchKernel(scaled_by_spec("compile"), "cpu")
        x = torch.arange(4, dtype=torch.float32)
        prepared = kernel.prepare([x, torch.tensor([1.5], dtype=torch.float64)])
        compiles = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        self.assertTrue(torch.equal(kernel.call(prepared)[0], x * 1.5))
        for value in (2.0, 3.25, 0.5):  # new values: no compile in a (timed) call
            prepared = kernel.prepare([x, torch.tensor([value], dtype=torch.float64)])
            self.assertTrue(torch.equal(kernel.call(prepared)[0], x * value))
        self.assertEqual(torch._dynamo.utils.counters["stats"]["unique_graphs"], compiles)



def linear_kernel(mode="eager"):
    sets = [{"label": "bench", "globals": {"n": 4, "out": 2}, "shapes": [[4], [2, 4], [2]]}]
    return TorchKernel({"mode": mode, "problem": WITH_PARAMETERS, "n_forward_inputs": 1,
                        "parameters": ["lin.weight", "lin.bias"], "size_sets": sets}, "cpu")


class ParameterTest(unittest.TestCase):
    """An eager module computes with the arena's parameters, bound around the call."""

    def inputs(self, k):
        g = torch.Generator().manual_seed(k)
        return [torch.randn(4, generator=g), torch.randn(2, 4, generator=g),
                torch.randn(2, generator=g)]

    def test_the_call_computes_with_the_given_parameters_and_leaves_the_modules_own(self):
        kernel = linear_kernel()
        fn, model = kernel._model_for([[4], [2, 4], [2]])
        self.assertIsInstance(fn, kernels.BoundForward)
        own = [p.data_ptr() for p in model.parameters()]
        for k in range(3):
            x, w, b = self.inputs(k)
            out = kernel.run([x, w, b])[0]
            expected = torch.func.functional_call(model, {"lin.weight": w, "lin.bias": b}, (x,))
            self.assertTrue(torch.equal(out, expected))
            self.assertTrue(torch.equal(out, (w @ x + b) * 2))
            self.assertEqual([p.data_ptr() for p in model.parameters()], own)

    def test_a_timed_loop_binds_outside_its_clock_once_per_call(self):
        kernel = linear_kernel()
        sets = [kernel.prepare(self.inputs(k)) for k in range(2)]
        fn = sets[0][0]
        events, bound = [], fn.bound

        def counted(params):
            events.append("bind")
            return bound(params)

        now = kernels.clock._now_ns

        def tick():
            events.append("clock")
            return now()

        seen = []
        forward = fn.model.forward
        fn.model.forward = lambda x: seen.append(fn.model.lin.weight.data_ptr()) or forward(x)
        tally = kernels.Tally()
        with unittest.mock.patch.object(fn, "bound", counted), \
                unittest.mock.patch.object(kernels.clock, "_now_ns", tick):
            kernel.timed_calls(sets, 4, None, 0, lambda k, results: None, tally)
        self.assertEqual(events, ["bind", "clock", "clock"] * 4)
        self.assertEqual(seen, [sets[k % 2][1][0].data_ptr() for k in range(4)])
        self.assertEqual(len(tally.ns), 4)

    def test_a_forward_that_returns_its_parameter_returns_the_arenas_tensor(self):
        kernel = linear_kernel()
        fn, model = kernel._model_for([[4], [2, 4], [2]])
        model.forward = lambda x: (model.lin.weight, model.lin(x))
        x, w, b = self.inputs(5)
        out = kernel.run([x, w, b])
        self.assertIs(out[0], w)
        self.assertTrue(torch.equal(out[1], w @ x + b))

    def test_torch_compile_takes_them_as_arguments(self):
        fn, _ = linear_kernel("compile")._model_for([[4], [2, 4], [2]])
        self.assertNotIsInstance(fn, kernels.BoundForward)


class TimedLoopTest(unittest.TestCase):
    def test_a_calls_results_are_released_inside_its_timed_region(self):
        # Outside the timer, releasing an output is time only the parent's clock sees, and a
        # baseline that returns its input written in place has none: a false timing_mismatch.
        kernel = TorchKernel(spec(with_shapes=True), "cpu")
        fn, model = kernel._model_for([[8]])
        events = []
        forward = model.forward

        def tracked(x):
            out = forward(x)
            weakref.finalize(out, events.append, "release")
            return out

        model.forward = tracked
        now = kernels.clock._now_ns

        def tick():
            events.append("clock")
            return now()

        sets = [kernel.prepare([torch.ones(8)]), kernel.prepare([torch.zeros(8)])]
        tally = kernels.Tally()
        with unittest.mock.patch.object(kernels.clock, "_now_ns", tick):
            kernel.timed_calls(sets, 5, None, 0, lambda k, results: events.append("last"), tally)
        # The last call on each set keeps its results for `last`, and releases them after.
        self.assertEqual(events, ["clock", "release", "clock"] * 3 +
                         ["clock", "clock", "last", "release"] * 2)
        self.assertEqual(len(tally.ns), 5)


CANDIDATES = os.path.join(os.path.dirname(__file__), "..", "..", "src", "torch_bridge",
                          "testdata", "candidates")
SCALED_RELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale

n = 3000
scale = 1.5

def get_inputs():
    return [torch.randn(n)]

def get_init_inputs():
    return [scale]
"""


def candidate_kernel(name):
    with open(os.path.join(CANDIDATES, name)) as f:
        candidate = f.read()
    return TorchKernel({"mode": "modelnew", "problem": SCALED_RELU, "candidate": candidate,
                        "n_forward_inputs": 1, "parameters": [],
                        "size_sets": [{"label": "bench", "globals": {"n": 3000},
                                       "shapes": [[3000]]}]}, "cpu")


class TritonCandidateTest(unittest.TestCase):
    """A @triton.jit kernel reads its own source: the candidate runs from a real file (Triton's
    interpreter here, on the CPU)."""

    def test_an_honest_triton_candidate_computes_the_problem(self):
        x = torch.randn(3000)
        out = candidate_kernel("scaled_relu_triton.py").run([x])[0]
        self.assertTrue(torch.allclose(out, torch.relu(x) * 1.5))

    def test_a_wrong_triton_candidate_is_wrong(self):
        x = -torch.rand(3000) - 0.5
        out = candidate_kernel("scaled_relu_triton_no_relu.py").run([x])[0]
        self.assertFalse(torch.allclose(out, torch.relu(x) * 1.5))

    def test_the_candidate_sees_the_problems_names_from_a_file_of_its_own(self):
        kernel = candidate_kernel("scaled_relu_triton.py")
        _, model = kernel._model_for(None)
        module = __import__("sys").modules[type(model).__module__]
        self.assertTrue(os.path.isfile(module.__file__))
        self.assertEqual(os.path.basename(module.__file__), "candidate.py")
        self.assertIn("Model", module.__dict__)

if __name__ == "__main__":
    unittest.main()
