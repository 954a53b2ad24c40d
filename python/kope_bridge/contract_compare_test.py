"""The checking contract's golden comparisons (testdata/contract/compare.json), on the bridge's
side: comparison.Comparer.compare gives every case's verdict and first-failure report (as CHECK
compares an output, in kernels.compared_dtype), and the fast test that may pass an output
without the exact rules (comparison.eager_failing; fast_compare's Triton kernel, run by
Triton's interpreter on the CPU) counts the case's failing elements. src/eval/contract_test.cc
checks compare.cc against the same file. Run by ctest:
python3 -m unittest kope_bridge.contract_compare_test."""
import json
import math
import os
import struct
import unittest

from .interpreted_fast_compare import fast_compare  # first: Triton interprets its kernels

import torch  # noqa: E402

from . import comparison  # noqa: E402
from .kernels import compared_dtype  # noqa: E402

CONTRACT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "testdata", "contract")
# The file's dtype names: kope's dtype number and the element's struct code.
DTYPES = {"f32": (0, "f"), "f64": (1, "d"), "f16": (2, "e"), "bf16": (3, None), "i32": (4, "i"),
          "i64": (5, "q"), "bool": (6, "B")}
UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}
# The Triton interpreter runs a program at a time: larger cases only go through the eager test.
INTERPRETED_ELEMENTS = 1 << 16


def load(name):
    with open(os.path.join(CONTRACT, name)) as f:
        return json.load(f)


def number(s):
    """A file value as a double: a hex float, nan, inf, -inf, or an integer."""
    if isinstance(s, int):
        return float(s)
    return float(s) if s in ("nan", "inf", "-inf") else float.fromhex(s)


def same(a, b):
    """The same double: NaN for NaN, and a zero's sign."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def element(v, dtype, size):
    """One element's bytes from its file value: raw bits, an integer, or a value of the dtype
    (exactly: the file holds only values of the dtype)."""
    if isinstance(v, str) and v.startswith("bits:"):
        return struct.pack("=" + UNSIGNED[size], int(v[5:], 16))
    code = DTYPES[dtype][1]
    if code is None:  # bfloat16: the top half of the float32
        bits = struct.unpack("=I", struct.pack("=f", number(v)))[0]
        assert bits & 0xFFFF == 0 or math.isnan(number(v)), v
        return struct.pack("=H", bits >> 16)
    x = v if dtype in ("i32", "i64", "bool") else number(v)
    packed = struct.pack("=" + code, x)
    assert dtype in ("i32", "i64", "bool") or same(struct.unpack("=" + code, packed)[0], x), v
    return packed


def tensor(values, dtype):
    """A 1-D tensor, in the dtype CHECK compares the kope dtype in, from the file's form: a
    list, or {count, fill, at: {index: value}}."""
    kope = DTYPES[dtype][0]
    size = torch.empty((), dtype=compared_dtype(kope)).element_size()
    if isinstance(values, list):
        raw = bytearray(b"".join(element(v, dtype, size) for v in values))
    else:
        raw = bytearray(element(values["fill"], dtype, size) * values["count"])
        for index, v in values.get("at", {}).items():
            raw[int(index) * size:(int(index) + 1) * size] = element(v, dtype, size)
    if not raw:
        return torch.empty(0, dtype=compared_dtype(kope))
    return torch.frombuffer(raw, dtype=compared_dtype(kope))


class CompareContractTest(unittest.TestCase):
    cases = load("compare.json")["cases"]

    def test_every_case_gives_its_verdict_and_first_failure(self):
        comparer = comparison.Comparer()
        for case in self.cases:
            with self.subTest(case=case["name"]):
                e, a = (tensor(case[k], case["dtype"]) for k in ("expected", "actual"))
                got = comparer.compare(e, a, number(case["rtol"]), number(case["atol"]))
                want = case["verdict"]
                self.assertEqual(got["mismatches"], want["mismatches"])
                self.assertEqual(got["mismatches"] == 0, want["ok"])
                self.assertEqual(got["first"], want["first_index"])
                if want["ok"]:
                    continue  # a passing output's errors are not reported (comparison.passing)
                ge, ga = number(got["expected"]), number(got["actual"])
                self.assertTrue(same(ge, number(want["expected"])), (got, want))
                self.assertTrue(same(ga, number(want["actual"])), (got, want))
                self.assertTrue(same(abs(ga - ge), number(want["error"])), (got, want))
                self.assertEqual(got["nan_inf"], want["nan_inf_mismatch"])
                self.assertTrue(same(number(got["max_abs"]), number(want["max_abs_error"])))
                self.assertTrue(same(number(got["max_rel"]), number(want["max_rel_error"])))

    def test_the_fast_test_counts_what_the_file_says_and_never_passes_a_failing_output(self):
        for case in self.cases:
            with self.subTest(case=case["name"]):
                e, a = (tensor(case[k], case["dtype"]) for k in ("expected", "actual"))
                rtol, atol = number(case["rtol"]), number(case["atol"])
                failing = comparison.eager_failing(e, a, rtol, atol)
                if "fast_test_failing" in case:
                    self.assertEqual(failing, case["fast_test_failing"])
                self.assertGreaterEqual(failing, case["verdict"]["mismatches"])
                self.assertEqual(comparison.all_within(e, a, rtol, atol), failing == 0)

    @unittest.skipIf(fast_compare is None, "Triton is not installed")
    def test_the_triton_fast_test_counts_as_the_eager_one(self):
        for case in self.cases:
            e, a = tensor(case["expected"], case["dtype"]), tensor(case["actual"], case["dtype"])
            if e.numel() > INTERPRETED_ELEMENTS or e.dtype == torch.uint8:
                continue  # uint8 (bool) outputs are never given to the Triton test on a device
            with self.subTest(case=case["name"]):
                rtol, atol = number(case["rtol"]), number(case["atol"])
                self.assertEqual(fast_compare.count_failing(e, a, rtol, atol),
                                 comparison.eager_failing(e, a, rtol, atol))


if __name__ == "__main__":
    unittest.main()
