"""Tests of fast_compare's Triton kernel, run by Triton's interpreter on the CPU (the GPU runs the
same kernel compiled; the checker compares it with the eager test there before using it), and of
how the checker uses it. Run by ctest: python3 -m unittest kope_bridge.fast_compare_test."""
import importlib
import os
import sys
import types
import unittest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel is defined

import torch  # noqa: E402

from . import checker  # noqa: E402

try:
    if "kope_bridge.fast_compare" in sys.modules:
        fast_compare = importlib.reload(sys.modules["kope_bridge.fast_compare"])
    else:
        from . import fast_compare
except ImportError:  # no Triton with this PyTorch
    fast_compare = None


@unittest.skipIf(fast_compare is None, "Triton is not installed")
class KernelTest(unittest.TestCase):
    def test_counts_as_the_eager_test_in_every_dtype(self):
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                      torch.int64):
            e, a = fast_compare.crafted_pair(dtype, "cpu")
            for rtol, atol in ((1e-3, 1e-5), (0.0, 0.0), (0.5, 0.5)):
                with self.subTest(dtype=dtype, rtol=rtol, atol=atol):
                    self.assertEqual(fast_compare.count_failing(e, a, rtol, atol),
                                     checker.eager_failing(e, a, rtol, atol))

    def test_nan_infinity_and_the_last_partial_block_fail(self):
        e, a = fast_compare.crafted_pair(torch.float32, "cpu")
        n = e.numel()
        self.assertNotEqual(n % fast_compare.BLOCK, 0)
        clean = torch.zeros(n)
        self.assertEqual(fast_compare.count_failing(clean, clean.clone(), 0.0, 0.0), 0)
        for index, value in ((n - 1, 1.0), (0, float("nan")), (3, float("inf"))):
            actual = clean.clone()
            actual[index] = value
            self.assertEqual(fast_compare.count_failing(clean, actual, 0.1, 0.1), 1, index)
        expected = clean.clone()
        expected[5] = float("inf")
        self.assertEqual(fast_compare.count_failing(expected, expected.clone(), 0.1, 0.1), 1)

    def test_the_bound_is_inclusive(self):
        e = torch.full((10,), 2.0, dtype=torch.float64)
        a = e + (0.5 + 0.25 * 2.0)
        self.assertEqual(fast_compare.count_failing(e, a, 0.25, 0.5), 0)

    def test_mismatched_tensors_are_refused(self):
        with self.assertRaises(ValueError):
            fast_compare.count_failing(torch.zeros(4), torch.zeros(5), 0.0, 0.0)


class CheckerUseTest(unittest.TestCase):
    def setUp(self):
        self.old = checker.TRITON_DEVICES
        checker.TRITON_DEVICES = ("cpu",)  # as on a GPU, with CPU tensors

    def tearDown(self):
        checker.TRITON_DEVICES = self.old

    def checker_with(self, count):
        c = checker.Checker(types.SimpleNamespace(torch=torch, device="cpu"))
        pair = fast_compare.crafted_pair if fast_compare else None
        c._triton = types.SimpleNamespace(count_failing=count, crafted_pair=pair)
        c._fast = checker._fast_test  # the fallback, eager here
        return c

    @unittest.skipIf(fast_compare is None, "Triton is not installed")
    def test_a_kernel_that_agrees_with_the_eager_test_is_used(self):
        calls = []

        def counting(e, a, rtol, atol):
            calls.append(e.numel())
            return fast_compare.count_failing(e, a, rtol, atol)

        c = self.checker_with(counting)
        e = torch.zeros(100)
        a = e.clone()
        a[7] = 1.0
        self.assertEqual(c._failing_fast_test(e, a, 0.0, 0.5), 1)
        self.assertEqual(calls[-1], 100)  # the tensor itself, after the crafted check

    @unittest.skipIf(fast_compare is None, "Triton is not installed")
    def test_a_kernel_that_disagrees_is_never_used(self):
        c = self.checker_with(lambda e, a, rtol, atol: 0)  # passes everything: wrong
        e = torch.zeros(100)
        a = e.clone()
        a[7] = 1.0
        self.assertEqual(c._failing_fast_test(e, a, 0.0, 0.5), 1)  # the fallback's answer
        self.assertFalse(c._triton_ok[torch.float32])

    def test_a_kernel_that_raises_is_dropped(self):
        def broken(*args):
            raise RuntimeError("no GPU")

        c = self.checker_with(broken)
        e = torch.zeros(100)
        self.assertEqual(c._failing_fast_test(e, e.clone(), 0.0, 0.0), 0)
        self.assertIs(c._triton, False)


if __name__ == "__main__":
    unittest.main()
