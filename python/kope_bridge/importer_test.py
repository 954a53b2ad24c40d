"""Tests of the importer's helpers that need no problem run. Run by ctest:
python3 -m unittest kope_bridge.importer_test."""
import os
import re
import tempfile
import unittest

import torch

from . import importer


class FamilyTest(unittest.TestCase):
    def test_level_one_names_give_their_families(self):
        cases = {
            "88_MinGPTNewGelu": "elementwise", "53_Min_reduction_over_a_dimension": "reduction",
            "47_Sum_reduction_over_a_dimension": "reduction", "51_Argmax_over_a_dimension":
            "reduction", "20_LeakyReLU": "elementwise", "41_Max_Pooling_1D": "pooling",
            "23_Softmax": "softmax", "96_HuberLoss": "loss", "89_cumsum": "scan",
            "1_Square_matrix_multiplication_": "matmul", "36_RMSNorm_": "norm",
        }
        for name, family in cases.items():
            with self.subTest(name):
                self.assertEqual(importer.family_of(name, ""), family)

    def test_the_operations_decide_where_the_name_does_not(self):
        self.assertEqual(importer.family_of("problem", "return torch.sum(x, dim=1)"),
                         "reduction")
        self.assertEqual(importer.family_of("problem", "return x.clone()"), "other")


class ValueDistributionTest(unittest.TestCase):
    def test_strictly_positive_probabilities_are_never_drawn_as_zero(self):
        probabilities = torch.rand(64, 512, generator=torch.Generator().manual_seed(0))
        d = importer.value_distribution(probabilities.softmax(dim=-1))
        self.assertEqual(d["kind"], "uniform")
        self.assertGreater(d["low"], 0.0)
        self.assertEqual(d["high"], 1.0)
        # What the reference draws: the lowest value a float32 uniform_ can give is low itself.
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            drawn = torch.zeros(1 << 16, dtype=dtype).uniform_(d["low"], d["high"])
            drawn[0] = torch.tensor(d["low"], dtype=dtype)
            self.assertTrue(torch.isfinite(torch.log(drawn.float())).all(), dtype)

    def test_values_that_reach_zero_are_drawn_from_zero(self):
        d = importer.value_distribution(torch.tensor([0.0, 0.25, 1.0]))
        self.assertEqual((d["kind"], d["low"], d["high"]), ("uniform", 0.0, 1.0))

    def test_a_constant_in_the_unit_interval_is_a_valid_interval(self):
        d = importer.value_distribution(torch.ones(8))  # a norm's weight
        self.assertEqual(d["kind"], "uniform")
        self.assertLess(d["low"], d["high"])


class InputDistributionsTest(unittest.TestCase):
    def test_an_elementwise_problems_unit_interval_input_also_gets_both_signs(self):
        for values in (torch.rand(4096), torch.rand(4096).clamp_(min=0.25),
                       torch.rand(64, 64).softmax(dim=-1)):
            dists = importer.input_distributions(values, "elementwise")
            self.assertEqual(len(dists), 2)
            self.assertGreaterEqual(dists[0]["low"], 0.0)
            self.assertEqual(dists[1], {"kind": "uniform", "low": -1.0, "high": 1.0})

    def test_other_families_parameters_and_masks_keep_one(self):
        self.assertEqual(len(importer.input_distributions(torch.rand(4096), "reduction")), 1)
        self.assertEqual(len(importer.input_distributions(torch.rand(4096), None)), 1)
        mask = torch.randint(0, 2, (4096,)).bool()
        self.assertEqual(importer.input_distributions(mask, "elementwise"),
                         [{"kind": "uniform", "low": 0, "high": 2}])
        self.assertEqual(len(importer.input_distributions(torch.randn(4096), "elementwise")), 1)


class ScalarAndMaskTest(unittest.TestCase):
    def test_a_mask_is_drawn_with_both_values_whatever_was_measured(self):
        for mask in (torch.zeros(8, dtype=torch.bool), torch.ones(8, dtype=torch.bool),
                     torch.tensor([True, False])):
            self.assertEqual(importer.value_distribution(mask),
                             {"kind": "uniform", "low": 0, "high": 2})

    def test_a_float_argument_stays_near_its_value_and_keeps_its_sign(self):
        for value in (3.14, 1.0, 0.2, -1.0, -0.3):
            d = importer.scalar_distribution(value)
            self.assertLessEqual(d["low"], value)
            self.assertGreater(d["high"], value)
            self.assertLessEqual(d["high"] - d["low"], 1.0)
            if value > 0:
                self.assertGreater(d["low"], 0)
            else:
                self.assertLess(d["high"], 0)
        self.assertEqual(importer.scalar_distribution(0.0),
                         {"kind": "uniform", "low": -0.5, "high": 0.5})

    def test_an_int_argument_keeps_its_value(self):
        self.assertEqual(importer.scalar_distribution(2), {"kind": "uniform", "low": 2, "high": 3})


# Class indices below a size: a loss's targets (95_CrossEntropyLoss).
CLASSES = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)

batch_size = 64
num_classes = 100

def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return []
"""


class IntegerRangeTest(unittest.TestCase):
    def test_class_indices_cover_what_every_size_set_takes(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "95_classes.py")
            with open(path, "w") as f:
                f.write(CLASSES)
            importer.import_problem(path, os.path.join(d, "out"))
            with open(os.path.join(d, "out", "task.toml")) as f:
                toml = f.read()
        smallest = min(int(n) for n in re.findall(r"num_classes = (\d+)", toml))
        # Measured at batch size 1 once, the targets were one class for every trial.
        self.assertIn(f'distribution = {{ kind = "uniform", low = 0, high = {smallest} }}', toml)
        self.assertGreater(smallest, 1)


# A GEMM of a large fan-in, then a clamp (level 2's 53_Gemm_Scaling_Hardtanh_GELU): its weights
# measured on a small instance and drawn at that scale at the file's sizes clamped every output.
GEMM_CLAMP = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.conv = nn.Conv1d(4, 4, 3)
        self.scale = nn.Parameter(torch.randn(out_features) * 0.02)

    def forward(self, x):
        return torch.clamp(self.gemm(x) * self.scale, -2, 2)

batch_size = 16
in_features = 4096
out_features = 64

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features]
"""

DEPTHWISE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, channels, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, stride=stride, groups=channels)

    def forward(self, x):
        return self.conv(x)

batch_size = 4
channels = 8
height = 32
width = 32
kernel_size = 3
stride = 1

def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]

def get_init_inputs():
    return [channels, kernel_size, stride]
"""


def imported(source, name, **options):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(source)
        importer.import_problem(path, os.path.join(d, "out"), **options)
        with open(os.path.join(d, "out", "task.toml")) as f:
            return f.read()


def law_of(toml, tensor):
    block = toml[toml.index(f'name = "{tensor}"'):]
    return block[:block.index("\n\n")]


class FanInTest(unittest.TestCase):
    def test_a_layers_weight_and_bias_scale_with_its_fan_in(self):
        toml = imported(GEMM_CLAMP, "53_gemm_clamp.py")
        scaled = 'distribution = { kind = "uniform", low = -1.0, high = 1.0, fan_in = "in_features" }'
        self.assertIn(scaled, law_of(toml, "gemm_weight"))
        self.assertIn(scaled, law_of(toml, "gemm_bias"))
        # A fan-in that no size changes (4 channels, kernel 3): the same bound at every size.
        self.assertIn('distribution = { kind = "uniform", low = -0.288675135, high = 0.288675135 }',
                      law_of(toml, "conv_weight"))
        # A parameter of the problem's own making keeps its measured law, its mean 0 where that
        # is within the measurement's error.
        self.assertIn('distribution = { kind = "normal", mean = 0.0,', law_of(toml, "scale"))

    def test_a_depthwise_weight_has_a_one_not_a_stride(self):
        toml = imported(DEPTHWISE, "84_depthwise.py")
        weight = law_of(toml, "conv_weight")
        # Its second dimension is 1 at every size, as the stride happens to be.
        self.assertIn('shape = ["channels", 1, "kernel_size", "kernel_size"]', weight)
        self.assertIn('fan_in = "kernel_size * kernel_size"', weight)

    def test_weights_initialized_otherwise_keep_their_measured_law(self):
        toml = imported(GEMM_CLAMP.replace(
            "self.scale = nn.Parameter", "nn.init.normal_(self.gemm.weight, std=1.0)\n"
            "        self.scale = nn.Parameter"), "53_gemm_normal.py")
        self.assertNotIn("fan_in", law_of(toml, "gemm_weight"))
        self.assertIn('fan_in = "in_features"', law_of(toml, "gemm_bias"))


# The same problem in half precision: KernelBench's fp16 tolerance.
HALF_RELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size = 16
dim = 64

def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]

def get_init_inputs():
    return []
"""


def tolerance_of(toml):
    block = toml[toml.index("[tolerance]"):]
    return block[:block.index("\n\n")]


class ToleranceTest(unittest.TestCase):
    def test_imported_tolerances_are_kernelbenchs(self):
        # get_tolerance_for_precision of KernelBench 0.2.0.dev0: fp32 1e-4, fp16 and bf16 1e-2.
        self.assertEqual(importer.TOLERANCE["f32"], 1e-4)
        self.assertEqual(importer.TOLERANCE["f16"], 1e-2)
        self.assertEqual(importer.TOLERANCE["bf16"], 1e-2)
        self.assertEqual(tolerance_of(imported(DEPTHWISE, "84_depthwise.py")),
                         "[tolerance]\nrtol = 0.0001\natol = 0.0001")
        self.assertEqual(tolerance_of(imported(HALF_RELU, "19_relu_half.py")),
                         "[tolerance]\nrtol = 0.01\natol = 0.01")

    def test_extracted_tasks_allow_two_ulps_of_their_dtype(self):
        # bf16's spacing is 2^-7 relative at worst: two of them exceed KernelBench's 1e-2.
        self.assertEqual(importer.WORKLOAD_TOLERANCE["bf16"], 2 * 2.0 ** -7)
        self.assertEqual(importer.WORKLOAD_TOLERANCE["f16"], 1e-2)
        self.assertEqual(importer.WORKLOAD_TOLERANCE["f32"], 1e-4)
        bf16 = HALF_RELU.replace("torch.float16", "torch.bfloat16")
        self.assertEqual(tolerance_of(imported(bf16, "relu_bf16.py",
                                               tolerance=importer.WORKLOAD_TOLERANCE)),
                         "[tolerance]\nrtol = 0.015625\natol = 0.015625")


if __name__ == "__main__":
    unittest.main()
