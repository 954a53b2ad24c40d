"""The checking contract's golden draws (testdata/contract/draw.json), on the bridge's side. The
bridge draws with its own generators (torch's, and fast_draw's Philox on a GPU), not
src/eval/inputs.cc's: what both sides promise is each case's law (README.md), checked here for
distribution.Distribution's draw and, where it serves the case, fast_draw's (run by Triton's
interpreter on the CPU), from the fields the DRAW request carries (the case's at_sizes, fan_in
applied); and that the same seed draws the same values again. src/eval/contract_test.cc checks
inputs.cc against the same laws and pins its values. Run by ctest:
python3 -m unittest kope_bridge.contract_draw_test."""
import importlib
import os
import sys
import unittest

os.environ["TRITON_INTERPRET"] = "1"  # before fast_draw's kernel is defined

import torch  # noqa: E402

from .contract_compare_test import load, number  # noqa: E402
from .distribution import Distribution  # noqa: E402

try:
    for name in ("kope_bridge.fast_compare", "kope_bridge.fast_draw"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
    from . import fast_draw  # noqa: E402
except ImportError:  # no Triton with this PyTorch
    fast_draw = None

TORCH = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
         "bf16": torch.bfloat16, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}
FIELDS = ("kind", "mean", "stddev", "low", "high", "low_exp", "high_exp", "num_distinct")


def distribution(case):
    """The case's distribution as DRAW gives it to the checker (checker.Checker.draw)."""
    d = case["at_sizes"]
    return Distribution(*[d[k] if k in ("kind", "num_distinct") else number(d[k])
                          for k in FIELDS])


def torch_draw(case, seed):
    """distribution.Distribution's draw, as checker.Checker._draw makes it on the CPU."""
    t = torch.empty(case["count"], dtype=TORCH[case["dtype"]])
    g = torch.Generator()
    g.manual_seed(seed & ((1 << 63) - 1))
    distribution(case).fill(t, g)
    return t


def fast_drawn(case, seed):
    """fast_draw's draw of the case, or None where it does not serve it."""
    dtype, d = TORCH[case["dtype"]], distribution(case)
    if fast_draw is None or not fast_draw.serves(dtype, d.kind, d.low, d.high):
        return None
    t = torch.empty(case["count"], dtype=dtype)
    fast_draw.draw(t, seed, d.kind, d.mean, d.stddev, d.low, d.high)
    return t


class DrawContractTest(unittest.TestCase):
    cases = load("draw.json")["cases"]

    def check_law(self, law, t):
        v = t.to(torch.float64)
        if law.get("finite"):
            self.assertTrue(bool(v.isfinite().all()))
        for key, test in (("min", lambda b: v >= b), ("max", lambda b: v <= b),
                          ("min_abs", lambda b: v.abs() >= b), ("max_abs", lambda b: v.abs() <= b)):
            if key in law:
                self.assertTrue(bool(test(number(law[key])).all()), (key, law[key]))
        if law.get("integral"):
            self.assertTrue(bool((v == v.floor()).all()))
        if law.get("both_signs"):
            self.assertTrue(bool((v < 0).any()) and bool((v > 0).any()))
        if "values" in law:
            self.assertEqual(set(v.tolist()), {number(x) for x in law["values"]})
        mean, stddev = float(v.mean()), float(v.std(correction=0))
        if "mean" in law:
            self.assertTrue(number(law["mean"][0]) <= mean <= number(law["mean"][1]), mean)
        if "stddev" in law:
            self.assertTrue(number(law["stddev"][0]) <= stddev <= number(law["stddev"][1]),
                            stddev)

    def test_the_torch_draw_follows_every_law_and_repeats_for_its_seed(self):
        for case in self.cases:
            with self.subTest(case=case["name"]):
                t = torch_draw(case, case["seed"])
                self.check_law(case["law"], t)
                self.assertTrue(torch.equal(t, torch_draw(case, case["seed"])))

    @unittest.skipIf(fast_draw is None, "Triton is not installed")
    def test_fast_draw_follows_the_laws_of_the_cases_it_serves(self):
        served = 0
        for case in self.cases:
            t = fast_drawn(case, case["seed"])
            if t is None:
                continue
            served += 1
            with self.subTest(case=case["name"]):
                self.check_law(case["law"], t)
                self.assertTrue(torch.equal(t, fast_drawn(case, case["seed"])))
        self.assertGreater(served, 0)

    def test_the_cases_cover_every_kind_and_dtype_a_task_can_name(self):
        kinds = {c["distribution"]["kind"] for c in self.cases}
        self.assertEqual(kinds, {"normal", "uniform", "wide", "negative", "ties", "positive"})
        self.assertEqual({c["dtype"] for c in self.cases}, set(TORCH))
        self.assertTrue(any("fan_in" in c["distribution"] for c in self.cases))


if __name__ == "__main__":
    unittest.main()
