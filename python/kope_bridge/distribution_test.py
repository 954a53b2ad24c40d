"""Tests of input drawing (distribution.py, and the checker's perturbation of one element): inputs
are drawn from their distributions. Run by ctest: python3 -m unittest
kope_bridge.distribution_test."""
import unittest

import torch

from . import checker
from . import distribution as draws


def distribution(kind, seed, **fields):
    """A Distribution of `kind` (defaults as in task.h for the other fields) and a generator."""
    d = dict(mean=0.0, stddev=1.0, low=0.0, high=1.0, low_exp=-6.0, high_exp=6.0, num_distinct=8)
    d.update(fields)
    g = torch.Generator()
    g.manual_seed(seed)
    return draws.Distribution(kind, d["mean"], d["stddev"], d["low"], d["high"], d["low_exp"],
                                d["high_exp"], d["num_distinct"]), g


class DrawTest(unittest.TestCase):
    def draw(self, kind, dtype=torch.float32, n=20000, **fields):
        dist, g = distribution(kind, 1234, **fields)
        return dist.values(n, dtype, g, torch.device("cpu")).to(dtype)

    def test_normal_has_its_mean_and_spread(self):
        v = self.draw(0, mean=3.0, stddev=2.0).double()
        self.assertAlmostEqual(float(v.mean()), 3.0, delta=0.1)
        self.assertAlmostEqual(float(v.std()), 2.0, delta=0.1)

    def test_uniform_and_positive_stay_in_range(self):
        v = self.draw(1, low=-2.0, high=5.0)
        self.assertTrue(bool((v >= -2.0).all() and (v < 5.0).all()))
        p = self.draw(5, low=0.5, high=2.0)
        self.assertGreater(float(p.min()), 0.0)

    def test_wide_spans_its_decades_with_both_signs(self):
        v = self.draw(2, dtype=torch.float64, low_exp=-3.0, high_exp=3.0)
        mags = v.abs()
        self.assertTrue(bool((mags >= 1e-3).all() and (mags <= 1e3).all()))
        self.assertTrue(bool((v < 0).any() and (v > 0).any()))

    def test_negative_is_strictly_negative(self):
        self.assertLess(float(self.draw(3).max()), 0.0)

    def test_ties_take_a_few_exact_values(self):
        v = self.draw(4, num_distinct=4)
        self.assertEqual(sorted(set(v.tolist())), [-1.0, -0.5, 0.0, 0.5])

    def test_integers_follow_the_range_or_zero_to_hundred(self):
        v = self.draw(1, dtype=torch.int32, low=-3.0, high=4.0)
        self.assertEqual((int(v.min()), int(v.max())), (-3, 3))
        w = self.draw(1, dtype=torch.int64, low=5.0, high=5.0)
        self.assertEqual((int(w.min()) >= 0, int(w.max()) < 100), (True, True))

    def fill(self, kind, dtype, n=20000, seed=1234, **fields):
        dist, g = distribution(kind, seed, **fields)
        t = torch.zeros(n, dtype=dtype)
        dist.fill(t, g)
        return t

    def test_fill_draws_normal_and_uniform_in_the_tensors_own_dtype(self):
        def no_float64_path(*args):
            raise AssertionError("drawn through values(), not in place")

        values, draws.Distribution.values = draws.Distribution.values, no_float64_path
        try:
            self._fill_in_place()
        finally:
            draws.Distribution.values = values

    def _fill_in_place(self):
        v = self.fill(0, torch.float32, mean=-1.0, stddev=3.0).double()
        self.assertAlmostEqual(float(v.mean()), -1.0, delta=0.15)
        self.assertAlmostEqual(float(v.std()), 3.0, delta=0.15)
        u = self.fill(1, torch.bfloat16, low=2.0, high=4.0).double()
        self.assertTrue(bool((u >= 2.0).all() and (u <= 4.0).all()))
        self.assertGreater(float(u.std()), 0.4)  # spread over the range, not a constant
        self.assertTrue(torch.equal(self.fill(0, torch.float16), self.fill(0, torch.float16)))
        self.assertFalse(torch.equal(self.fill(0, torch.float16), self.fill(0, torch.float16,
                                                                            seed=99)))

    def test_fill_takes_the_float64_path_for_the_other_laws(self):
        old = draws.CHUNK
        draws.CHUNK = 4096  # several chunks
        try:
            w = self.fill(2, torch.float32, low_exp=-2.0, high_exp=2.0)
            t = self.fill(4, torch.float32, num_distinct=4)
            i = self.fill(1, torch.int32, low=-3.0, high=4.0)
        finally:
            draws.CHUNK = old
        self.assertTrue(bool((w.abs() >= 1e-2 * 0.999).all() and (w.abs() <= 1e2 * 1.001).all()))
        self.assertEqual(sorted(set(t.tolist())), [-1.0, -0.5, 0.0, 0.5])
        self.assertEqual((int(i.min()), int(i.max())), (-3, 3))

    def test_perturb_changes_exactly_one_element(self):
        t = self.draw(4, n=64, num_distinct=2)
        before = t.clone()
        dist, g = distribution(4, 7, num_distinct=2)
        places = torch.Generator().manual_seed(7)
        j, old = checker.Checker._perturb(t, dist, g, places)
        self.assertEqual((t != before).nonzero().flatten().tolist(), [j])
        self.assertEqual(old.tolist(), [before[j].item()])

    def test_perturb_keeps_an_element_only_a_law_of_one_value_cannot_change(self):
        t = torch.full((8,), 0.0)
        dist, g = distribution(4, 7, num_distinct=1)  # ties of one value: 0.0
        checker.Checker._perturb(t, dist, g, torch.Generator().manual_seed(1))
        self.assertEqual(t.tolist(), [0.0] * 8)


if __name__ == "__main__":
    unittest.main()
