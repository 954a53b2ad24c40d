"""Tests of the comparison's rules (comparison.py) and of the checker's fingerprint of an output:
they must give what src/eval/compare.cc gives (verdict, count, first failure, errors). Run by
ctest: python3 -m unittest kope_bridge.comparison_test."""
import math
import types
import unittest

import torch

from . import checker
from . import comparison


def make_checker():
    server = types.SimpleNamespace(torch=torch, device="cpu")
    return checker.Checker(server)


def h(x):
    return float(x).hex()


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.c = comparison.Comparer()

    def compare(self, expected, actual, rtol=1e-3, atol=1e-3, dtype=torch.float32):
        return self.c.compare(torch.tensor(expected, dtype=dtype), torch.tensor(actual, dtype=dtype),
                              rtol, atol)

    def test_equal_values_pass(self):
        r = self.compare([1.0, -2.0, 0.0], [1.0, -2.0, 0.0])
        self.assertEqual(r["mismatches"], 0)
        self.assertEqual(r["first"], -1)

    def test_nan_matches_nan_and_infinity_itself(self):
        inf, nan = math.inf, math.nan
        r = self.compare([nan, inf, -inf, 1.0], [nan, inf, -inf, 1.0005])
        self.assertEqual(r["mismatches"], 0)

    def test_nan_against_a_number_is_a_nan_inf_mismatch(self):
        r = self.compare([1.0, 2.0, 3.0], [1.0, math.nan, 3.0])
        self.assertEqual((r["mismatches"], r["first"], r["nan_inf"]), (1, 1, True))
        self.assertEqual(r["expected"], h(2.0))
        self.assertTrue(math.isnan(float.fromhex(r["actual"])))

    def test_infinity_of_the_other_sign_fails(self):
        r = self.compare([math.inf], [-math.inf])
        self.assertEqual((r["mismatches"], r["nan_inf"]), (1, True))

    def test_tolerance_bound_is_inclusive(self):
        # |a - e| <= atol + rtol * |e|, in float64 as compare.cc computes it.
        e = torch.tensor([2.0], dtype=torch.float64)
        bound = 0.5 + 0.25 * 2.0
        ok = self.c.compare(e, torch.tensor([2.0 + bound], dtype=torch.float64), 0.25, 0.5)
        self.assertEqual(ok["mismatches"], 0)
        bad = self.c.compare(e, torch.tensor([math.nextafter(2.0 + bound, 9.0)],
                                             dtype=torch.float64), 0.25, 0.5)
        self.assertEqual((bad["mismatches"], bad["nan_inf"]), (1, False))

    def test_counts_first_failure_and_errors_over_finite_pairs(self):
        r = self.compare([1.0, 2.0, 4.0, math.nan, 0.0], [1.0, 2.5, 4.0, 7.0, 0.25],
                         rtol=0.0, atol=0.1)
        self.assertEqual((r["mismatches"], r["first"], r["nan_inf"]), (3, 1, False))
        self.assertEqual((r["expected"], r["actual"]), (h(2.0), h(2.5)))
        self.assertEqual(r["max_abs"], h(0.5))  # the NaN pair counts for neither error
        self.assertEqual(r["max_rel"], h(0.25))  # |e| = 0 is left out of the relative error

    def test_a_passing_output_reports_no_errors_a_failing_one_those_of_every_chunk(self):
        self.assertEqual(self.compare([1.0, 2.0], [1.0005, 2.0]), comparison.passing())
        old = comparison.COMPARE_CHUNK
        comparison.COMPARE_CHUNK = 2
        try:
            f64 = {"dtype": torch.float64}
            r = self.c.compare(torch.tensor([1.0, 2.0, 4.0, 8.0], **f64),
                               torch.tensor([1.5, 2.0, 4.0, 9.0], **f64), 0.0, 0.6)
        finally:
            comparison.COMPARE_CHUNK = old
        self.assertEqual((r["mismatches"], r["first"]), (1, 3))
        self.assertEqual(r["max_abs"], h(1.0))
        self.assertEqual(r["max_rel"], h(0.5))  # from the first chunk, which passed

    def test_first_failure_is_found_across_chunks(self):
        old = comparison.COMPARE_CHUNK
        comparison.COMPARE_CHUNK = 4
        try:
            e = torch.zeros(11)
            a = torch.zeros(11)
            a[9] = 1.0
            a[10] = math.inf
            r = self.c.compare(e, a, 0.0, 0.0)
        finally:
            comparison.COMPARE_CHUNK = old
        self.assertEqual((r["mismatches"], r["first"], r["nan_inf"]), (2, 9, False))

    def test_half_precision_is_compared_in_float64(self):
        r = self.compare([1.0, 2.0], [1.0, 2.001953125], rtol=0.0, atol=1e-3,
                         dtype=torch.float16)
        self.assertEqual((r["mismatches"], r["first"]), (1, 1))

    def test_fast_test_counts_what_the_exact_rules_may_fail(self):
        e = torch.tensor([1.0, math.nan, math.inf, 2.0])
        a = torch.tensor([1.0, math.nan, math.inf, 3.0])
        bounds = torch.tensor([0.0, 0.1], dtype=torch.float64)
        # The NaN and infinity pairs pass exactly but not the fast test: they go to the rules.
        self.assertEqual(int(comparison.fast_test(e, a, bounds[0], bounds[1])), 3)


class FusedWindowsTest(unittest.TestCase):
    def test_windows_of_a_few_sizes_cover_every_element_once(self):
        c = comparison.Comparer()
        windows = []

        def fake_fast(e, a, rtol, atol):  # stands for the compiled test, records its shapes
            windows.append(e.numel())
            return comparison.fast_test(e, a, rtol, atol)

        c.fast = fake_fast
        old = comparison.FUSED_MIN_ELEMENTS, comparison.FUSED_MAX_WINDOW
        comparison.FUSED_MIN_ELEMENTS, comparison.FUSED_MAX_WINDOW = 4, 16
        try:
            e = torch.zeros(45)
            a = torch.zeros(45)
            a[[0, 40, 44]] = 1.0  # in the first window, the last window and the eager tail
            failing = c.failing_fast_test(e, a, 0.0, 0.5)
        finally:
            comparison.FUSED_MIN_ELEMENTS, comparison.FUSED_MAX_WINDOW = old
        self.assertEqual(windows, [16, 16, 8, 4])  # then 1 element eagerly
        self.assertEqual(failing, 3)


class FingerprintTest(unittest.TestCase):
    def test_one_element_is_not_a_constant_output(self):
        c = make_checker()
        constant = lambda values: c._fingerprint(torch.tensor(values), 4)["constant"]  # noqa: E731
        self.assertFalse(constant([3.0]))  # a scalar, as a loss returns
        self.assertTrue(constant([3.0, 3.0, 3.0]))
        self.assertFalse(constant([3.0, 3.0, 3.0, 2.0]))

    def test_the_fingerprint_is_the_comparers_one_pass_checksum(self):
        c = make_checker()
        passes = []
        checksum = c.comparer.checksum_and_constant
        c.comparer.checksum_and_constant = lambda w: passes.append(w.numel()) or checksum(w)
        a = torch.arange(2048, dtype=torch.float32)  # above SMALL_OUTPUT_BYTES
        found = c._fingerprint(a, 4)
        fingerprint = found["fingerprint"]
        self.assertEqual(passes, [2048])  # the elements, once
        self.assertFalse(found["constant"])
        self.assertTrue(c._fingerprint(torch.full((2048,), 3.0), 4)["constant"])
        self.assertEqual(fingerprint, str(comparison.weighted_words(a.view(torch.int32))))
        self.assertNotEqual(fingerprint, c._fingerprint(a.flip(0), 4)["fingerprint"])

    def test_small_outputs_whose_bytes_add_up_alike_have_different_fingerprints(self):
        c = make_checker()
        loss = lambda b: torch.tensor(b, dtype=torch.uint8).view(torch.float32)  # noqa: E731
        first = c._fingerprint(loss([1, 2, 0, 64]), 4)["fingerprint"]
        self.assertNotEqual(first, c._fingerprint(loss([2, 1, 0, 64]), 4)["fingerprint"])
        self.assertEqual(first, c._fingerprint(loss([1, 2, 0, 64]), 4)["fingerprint"])
        self.assertLess(int(first), 1 << 64)  # the parent reads it as a 64-bit number

    def test_weighted_sum_tells_a_permutation(self):
        a = torch.arange(40, dtype=torch.int64)
        b = a.flip(0)
        raw = lambda t: t.view(torch.uint8)  # noqa: E731
        self.assertNotEqual(comparison.weighted_sum(raw(a)),
                            comparison.weighted_sum(raw(b)))
        self.assertEqual(comparison.weighted_sum(raw(a)),
                         comparison.weighted_sum(raw(a.clone())))
        old = comparison.COMPARE_CHUNK
        comparison.COMPARE_CHUNK = 7  # chunks weigh words by their place in the whole tensor
        try:
            chunked = comparison.weighted_sum(raw(a))
        finally:
            comparison.COMPARE_CHUNK = old
        self.assertEqual(chunked, comparison.weighted_sum(raw(a)))


class SameBytesTest(unittest.TestCase):
    def test_same_bytes_at_every_alignment(self):
        a = torch.arange(64, dtype=torch.uint8)
        b = a.clone()
        for start, length in ((0, 64), (8, 16), (4, 12), (2, 6), (1, 7), (3, 1)):
            x, y = a[start:start + length], b[start:start + length]
            self.assertTrue(comparison.same_bytes(x, y))
            b[start + length - 1] ^= 1
            self.assertFalse(comparison.same_bytes(x, y))
            b[start + length - 1] ^= 1


if __name__ == "__main__":
    unittest.main()
