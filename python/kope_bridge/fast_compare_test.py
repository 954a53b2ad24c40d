"""Tests of fast_compare's Triton kernels, run by Triton's interpreter on the CPU (the GPU runs the
same kernels compiled; the checker compares them with the eager test there before using them).
How the checker uses them: checker_fast_compare_test.py. Run by ctest: python3 -m unittest
kope_bridge.fast_compare_test."""
import os
import subprocess
import sys
import unittest

from .interpreted_fast_compare import fast_compare  # first: Triton interprets its kernels

import torch  # noqa: E402

from . import comparison  # noqa: E402


@unittest.skipIf(fast_compare is None, "Triton is not installed")
class KernelTest(unittest.TestCase):
    def test_counts_as_the_eager_test_in_every_dtype(self):
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                      torch.int64):
            e, a = fast_compare.crafted_pair(dtype, "cpu")
            for rtol, atol in ((1e-3, 1e-5), (0.0, 0.0), (0.5, 0.5)):
                with self.subTest(dtype=dtype, rtol=rtol, atol=atol):
                    self.assertEqual(fast_compare.count_failing(e, a, rtol, atol),
                                     comparison.eager_failing(e, a, rtol, atol))

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

    def test_the_checksum_tells_a_constant_tensor_in_the_same_pass(self):
        w = torch.full((3 * fast_compare.BLOCK + 5,), 7, dtype=torch.int32)
        self.assertEqual(fast_compare.checksum_and_constant(w), (fast_compare.checksum(w), True))
        for at in (0, fast_compare.BLOCK + 3, w.numel() - 1):  # first, middle, partial last block
            varied = w.clone()
            varied[at] = 8
            self.assertEqual(fast_compare.checksum_and_constant(varied),
                             (fast_compare.checksum(varied), False))
        self.assertEqual(fast_compare.checksum_and_constant(w[:1]), (7, False))  # one element
        self.assertEqual(fast_compare.checksum_and_constant(w[:0]), (0, False))
        with self.assertRaises(ValueError):
            fast_compare.checksum_and_constant(torch.zeros(4))

    def test_differ_finds_one_different_word_anywhere(self):
        a = torch.arange(3 * fast_compare.BLOCK + 5, dtype=torch.int64)
        self.assertFalse(bool(fast_compare.differ(a, a.clone())))
        for at in (0, 2 * fast_compare.BLOCK, a.numel() - 1):
            b = a.clone()
            b[at] += 1 << 40  # in the upper half of the word
            self.assertTrue(bool(fast_compare.differ(a, b)))
        self.assertFalse(bool(fast_compare.differ(a[:0], a[:0])))
        for bad in ((a, a[1:]), (a, a.to(torch.int32)), (a.double(), a.double())):
            with self.assertRaises(ValueError):
                fast_compare.differ(*bad)

    def test_the_keyed_hash_tells_a_changed_copy(self):
        g = torch.Generator().manual_seed(5)
        w = torch.randint(-(1 << 62), 1 << 62, (3 * fast_compare.BLOCK + 5,), generator=g)
        key = (0x5555_0000_1234_5678, 0x0123_4567_89AB_CDEF)
        base = int(fast_compare.keyed_hash(w, key))
        self.assertEqual(int(fast_compare.keyed_hash(w.clone(), key)), base)
        for at, bit in ((0, 0), (fast_compare.BLOCK, 40), (w.numel() - 1, 62)):
            changed = w.clone()
            changed[at] ^= 1 << bit
            self.assertNotEqual(int(fast_compare.keyed_hash(changed, key)), base)
        swapped = w.clone()
        swapped[[3, 4]] = w[[4, 3]]
        self.assertNotEqual(int(fast_compare.keyed_hash(swapped, key)), base)
        self.assertNotEqual(int(fast_compare.keyed_hash(w, (key[0] + 1, key[1]))), base)
        copy = torch.zeros_like(w)
        self.assertEqual(int(fast_compare.keyed_hash(w, key, copy_to=copy)), base)
        self.assertTrue(torch.equal(copy, w))
        self.assertEqual(int(fast_compare.keyed_hash(w[:0], key)), 0)
        for bad in ((w.double(),), (w, torch.zeros(3, dtype=torch.int64))):
            with self.assertRaises(ValueError):
                fast_compare.keyed_hash(bad[0], key, *bad[1:])
        for dtype in fast_compare.WORD_RANGES:
            self.assertTrue(fast_compare.keyed_hash_works(dtype, torch.device("cpu")))

    def test_the_keyed_hash_from_an_index_on_is_those_words_terms(self):
        g = torch.Generator().manual_seed(6)
        w = torch.randint(-(1 << 30), 1 << 30, (2 * fast_compare.BLOCK + 9,), generator=g,
                          dtype=torch.int32)
        key = fast_compare.new_key(0x0F0F_1234_5678_9ABC_DEF0_1357_9BDF_2468)
        start = fast_compare.BLOCK - 5
        terms = [fast_compare.mix_term(x, i, key) for i, x in enumerate(w.tolist())]
        self.assertEqual(int(fast_compare.keyed_hash(w[start:], key, start=start)),
                         fast_compare.as_int64(sum(terms[start:])))
        self.assertEqual(int(fast_compare.keyed_hash(w[start:start + 1], key, start=start)),
                         fast_compare.as_int64(terms[start]))
        whole = int(fast_compare.keyed_hash(w, key))
        parts = int(fast_compare.keyed_hash(w[:start], key)) + \
            int(fast_compare.keyed_hash(w[start:], key, start=start))
        self.assertEqual(fast_compare.as_int64(parts), whole)
        # A start whose folded key would be a small number is refused, never hashed with a
        # key the kernel would take as 32 bits.
        k2 = (1 << 62) | 1
        with self.assertRaises(ValueError):
            fast_compare.keyed_hash(w[1:], ((1 << 64) - k2 + 5, k2), start=1)

    def test_a_keyed_hash_that_misses_changes_fails_its_check(self):
        def constant(words, key, copy_to=None):  # copies, but hashes nothing
            if copy_to is not None:
                copy_to.copy_(words)
            return torch.zeros((), dtype=torch.int64)

        real = fast_compare.keyed_hash
        fast_compare.keyed_hash = constant
        try:
            self.assertFalse(fast_compare.keyed_hash_works(torch.int64, torch.device("cpu")))
        finally:
            fast_compare.keyed_hash = real

    def test_the_fingerprint_is_the_same_sum_with_and_without_triton(self):
        words = torch.arange(-3000, 3 * fast_compare.BLOCK, dtype=torch.int32)
        old = comparison.TRITON_DEVICES
        try:
            comparison.TRITON_DEVICES = ("cpu",)
            with_triton = comparison.Comparer().checksum_and_constant(words)
            comparison.TRITON_DEVICES = ()
            without = comparison.Comparer().checksum_and_constant(words)
        finally:
            comparison.TRITON_DEVICES = old
        self.assertEqual(with_triton, without)
        self.assertEqual(with_triton[0], comparison.weighted_words(words))

    def test_the_kernels_compile_for_a_hopper_gpu(self):
        # The interpreter forgives what the compiler may not: compile both kernels for sm_90
        # (an H100 or H200) without a GPU, in every form the checker launches them, in a
        # process of their own (this one interprets them).
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        done = subprocess.run([sys.executable, "-c", COMPILE_FOR_HOPPER], env=env, text=True,
                              capture_output=True, timeout=600,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if done.returncode == 77:
            self.skipTest(done.stdout.strip())
        self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
        self.assertEqual(done.stdout.count("compiled"), 26, done.stdout)


COMPILE_FOR_HOPPER = """
import sys
try:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError as e:
    print("no ahead-of-time compiler interface:", e)
    sys.exit(77)
from kope_bridge import fast_compare as fc
target, block = GPUTarget("cuda", 90, 32), {"BLOCK": fc.BLOCK}
words = ("u8", "i16", "i32", "i64")
forms = [(fc._checksum_kernel, {"w_ptr": "*" + w, "partial_ptr": "*i64", "differs_ptr": "*i32",
                                "n": "i64", "CONSTANT": "constexpr", "BLOCK": "constexpr"},
          dict(block, CONSTANT=constant)) for w in words for constant in (False, True)]
forms += [(fc._keyed_kernel, {"src_ptr": "*" + w, "dst_ptr": "*" + w, "partial_ptr": "*i64",
                              "n": "i64", "k1": "i64", "k2": "i64", "COPY": "constexpr",
                              "BLOCK": "constexpr"}, dict(block, COPY=copy))
          for w in words for copy in (False, True)]
forms += [(fc._differ_kernel, {"a_ptr": "*" + w, "b_ptr": "*" + w, "partial_ptr": "*i32",
                               "n": "i64", "BLOCK": "constexpr"}, block) for w in words]
forms += [(fc._failing_kernel, {"e_ptr": "*" + t, "a_ptr": "*" + t, "bounds_ptr": "*fp64",
                                "partial_ptr": "*i32", "n": "i64", "VIA_F32": "constexpr",
                                "BLOCK": "constexpr"}, dict(block, VIA_F32=t in ("fp16", "bf16")))
          for t in ("fp32", "fp64", "fp16", "bf16", "i32", "i64")]
for kernel, signature, constants in forms:
    k = triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=constants),
                       target=target)
    assert ".entry" in k.asm["ptx"]
    print("compiled", kernel.__name__, signature)
"""


if __name__ == "__main__":
    unittest.main()
