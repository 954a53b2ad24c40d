"""Tests of fast_draw's Triton kernel, run by Triton's interpreter on the CPU (the GPU runs the
same kernel compiled, and checks it with draw_works before using it). Run by ctest:
python3 -m unittest kope_bridge.fast_draw_test."""
import importlib
import os
import sys
import unittest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel is defined

import torch  # noqa: E402

try:
    for name in ("kope_bridge.fast_compare", "kope_bridge.fast_draw"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
    from . import fast_compare, fast_draw  # noqa: E402
except ImportError:  # no Triton with this PyTorch
    fast_draw = None


@unittest.skipIf(fast_draw is None, "Triton is not installed")
class DrawTest(unittest.TestCase):
    def test_it_works_for_every_dtype_it_serves(self):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            with self.subTest(dtype=dtype):
                self.assertTrue(fast_draw.draw_works(dtype, "cpu"))

    def test_the_hash_is_keyed_hash_of_the_elements_as_words(self):
        key = fast_compare.new_key(0x5555_AAAA_1234_5678_9ABC_DEF0_0F0F_F0F0)
        for n in (1, 5, fast_draw.BLOCK, 2 * fast_draw.BLOCK + 3):
            own, peer = torch.empty(n), torch.full((n,), 7.0)
            h = fast_draw.draw(own, 123, 0, 0.0, 1.0, 0.0, 0.0, peer=peer, key=key)
            self.assertTrue(torch.equal(own, peer))
            self.assertEqual(int(h), int(fast_compare.keyed_hash(own.view(torch.int32), key)))

    def test_values_depend_on_the_seed_and_the_index_alone(self):
        whole = torch.empty(3 * fast_draw.BLOCK)
        fast_draw.draw(whole, 99, 1, 0.0, 0.0, -1.0, 1.0)
        part = torch.empty(fast_draw.BLOCK + 5)  # a shorter tensor: a prefix of the same values
        fast_draw.draw(part, 99, 1, 0.0, 0.0, -1.0, 1.0)
        self.assertTrue(torch.equal(part, whole[:part.numel()]))
        self.assertTrue(bool((whole >= -1.0).all() and (whole < 1.0).all()))
        self.assertGreater(int(whole.unique().numel()), whole.numel() * 0.99)

    def test_uniform_bounds_hold_in_half_precision(self):
        # In float16 every value of [1 - 2^-12, 1) rounds to 1.0, about 1 in 4096 of them: drawn
        # as `low` instead, as uniform_ does. 64K values: a rounding left in fails the test.
        low = 2.0 ** -24
        for dtype in (torch.float16, torch.bfloat16):
            t = torch.empty(16 * fast_draw.BLOCK, dtype=dtype)
            fast_draw.draw(t, 5, 5, 0.0, 0.0, low, 1.0)
            self.assertTrue(bool((t.float() > 0).all()), dtype)
            self.assertTrue(bool((t.float() < 1.0).all()), dtype)
            fast_draw.draw(t, 6, 1, 0.0, 0.0, -1.0, 1.0)
            self.assertTrue(bool((t.float() >= -1.0).all() and (t.float() < 1.0).all()), dtype)

    def test_it_refuses_what_it_does_not_serve(self):
        self.assertFalse(fast_draw.serves(torch.float64, 0, 0.0, 1.0))
        self.assertFalse(fast_draw.serves(torch.float32, 2, 0.0, 1.0))  # wide
        self.assertFalse(fast_draw.serves(torch.float32, 1, 1.0, 1.0))  # an empty interval
        self.assertTrue(fast_draw.serves(torch.bfloat16, 5, 0.0, 1.0))
        with self.assertRaises(ValueError):
            fast_draw.draw(torch.empty(4, dtype=torch.float64), 1, 0, 0.0, 1.0, 0.0, 0.0)
        with self.assertRaises(ValueError):
            fast_draw.draw(torch.empty(4), 1, 0, 0.0, 1.0, 0.0, 0.0, peer=torch.empty(5))


if __name__ == "__main__":
    unittest.main()
