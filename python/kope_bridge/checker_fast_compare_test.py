"""Tests of how the checker uses fast_compare's Triton kernels (Triton's interpreter standing for
the GPU): a kernel is used only when it agrees with the eager test, CHECK's one-synchronization
path gives the findings of the element-by-element one, and the keyed hashes of the reference's
inputs stay up to date. Run by ctest: python3 -m unittest kope_bridge.checker_fast_compare_test."""
import json
import struct
import types
import unittest

from .interpreted_fast_compare import fast_compare  # first: Triton interprets its kernels

import torch  # noqa: E402

from . import checker  # noqa: E402
from . import checker_test  # noqa: E402
from . import comparison  # noqa: E402
from .distribution_test import distribution  # noqa: E402


@unittest.skipIf(fast_compare is None, "Triton is not installed")
class PerturbationRehashTest(unittest.TestCase):
    """checker._rehash brings a keyed hash of the reference's inputs up to date with a
    perturbation, on the device, as hashing the perturbed inputs again would."""

    def test_the_updated_hash_is_the_hash_of_the_perturbed_inputs(self):
        for words, elements in ((torch.int32, 300), (torch.int64, 301)):  # a half word too
            nbytes = elements * 4
            server = types.SimpleNamespace(torch=torch, device="cpu", mirror=None,
                                           host=torch.zeros(nbytes + 64, dtype=torch.uint8),
                                           arena_bytes=nbytes + 64)
            c = checker.Checker(server)
            own = server.host[:nbytes].view(torch.float32)
            own.copy_(torch.randn(elements, generator=torch.Generator().manual_seed(3)))
            span = nbytes // 8 * 8 if words == torch.int64 else nbytes
            key = fast_compare.new_key(0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321)
            hashed = lambda: int(fast_compare.keyed_hash(server.host[:span].view(words), key))
            before = hashed()
            c.input_hashes = types.SimpleNamespace(
                ranges=[(0, span)], values=[torch.tensor(before)], words=[words], key=key,
                hasher=fast_compare)
            dist, g = distribution(0, 9)
            places = torch.Generator().manual_seed(9 if words == torch.int32 else 10)
            j, old = c._perturb(own[:span // 4], dist, g, places)
            spec = types.SimpleNamespace(inputs=[types.SimpleNamespace(
                byte_range=lambda arena_bytes: (0, span))])
            c._rehash(spec, [(j * 4, 4, old)])
            self.assertIsNotNone(c.input_hashes)
            self.assertNotEqual(hashed(), before)
            self.assertEqual(int(c.input_hashes.values[0]), hashed())


class CheckerUseTest(unittest.TestCase):
    def setUp(self):
        self.old = comparison.TRITON_DEVICES
        comparison.TRITON_DEVICES = ("cpu",)  # as on a GPU, with CPU tensors

    def tearDown(self):
        comparison.TRITON_DEVICES = self.old

    def comparer_with(self, count):
        c = comparison.Comparer()
        pair = fast_compare.crafted_pair if fast_compare else None
        c.triton = types.SimpleNamespace(count_failing=count, crafted_pair=pair)
        c.fast = comparison.fast_test  # the fallback, eager here
        return c

    @unittest.skipIf(fast_compare is None, "Triton is not installed")
    def test_a_kernel_that_agrees_with_the_eager_test_is_used(self):
        calls = []

        def counting(e, a, rtol, atol):
            calls.append(e.numel())
            return fast_compare.count_failing(e, a, rtol, atol)

        c = self.comparer_with(counting)
        e = torch.zeros(100)
        a = e.clone()
        a[7] = 1.0
        self.assertEqual(c.failing_fast_test(e, a, 0.0, 0.5), 1)
        self.assertEqual(calls[-1], 100)  # the tensor itself, after the crafted check

    @unittest.skipIf(fast_compare is None, "Triton is not installed")
    def test_a_kernel_that_disagrees_is_never_used(self):
        c = self.comparer_with(lambda e, a, rtol, atol: 0)  # passes everything: wrong
        e = torch.zeros(100)
        a = e.clone()
        a[7] = 1.0
        self.assertEqual(c.failing_fast_test(e, a, 0.0, 0.5), 1)  # the fallback's answer
        self.assertFalse(c.triton_ok[torch.float32])

    def test_a_kernel_that_raises_is_dropped(self):
        def broken(*args):
            raise RuntimeError("no GPU")

        c = self.comparer_with(broken)
        e = torch.zeros(100)
        self.assertEqual(c.failing_fast_test(e, e.clone(), 0.0, 0.0), 0)
        self.assertIs(c.triton, False)


@unittest.skipIf(fast_compare is None, "Triton is not installed")
class CheckAtOnceTest(checker_test.ReferenceCallTest):
    """CHECK's one-synchronization test (Triton's interpreter standing for the GPU) must give
    the findings of its element-by-element path: ReferenceCallTest's cases run again through it,
    and each kind of failure is compared."""

    def setUp(self):
        self.old = comparison.TRITON_DEVICES
        comparison.TRITON_DEVICES = ("cpu",)

    def tearDown(self):
        comparison.TRITON_DEVICES = self.old

    @staticmethod
    def spied(c):
        """The calls CHECK's first read makes to keyed_hash and differ, by name (and in
        c.hashed_words, the words each read)."""
        calls, words = [], []
        c.hashed_words = words

        def spy(name):
            real = getattr(fast_compare, name)

            def call(*args, **kwargs):
                calls.append(name)
                words.append(args[0].numel())
                return real(*args, **kwargs)
            return call

        c.comparer.triton = types.SimpleNamespace(**vars(fast_compare))
        c.comparer.triton.keyed_hash, c.comparer.triton.differ = spy("keyed_hash"), spy("differ")
        return calls

    def test_check_hashes_the_candidates_copy_and_the_reference_is_watched_in_one_pass(self):
        c, server = self.checker(lambda x: [x * 2])
        c._fast_draw = lambda dtype, d: None  # drawn by torch, then copied and hashed
        calls = self.spied(c)
        sums = []
        input_sums = c._input_sums
        c._input_sums = lambda ranges: sums.append(1) or input_sums(ranges)
        own_in = server.host[:64].view(torch.float32)
        peer_byte = c.peer.tensor[36:37]  # a byte of the candidate's element 9
        for trial in range(2):
            with self.subTest(trial=trial):
                calls.clear()
                c.draw(checker_test.p.Reader(checker_test.draw_payload(91 + trial,
                                                                       checker.DRAW_TRIAL)))
                self.assertEqual(calls, ["keyed_hash"])  # the copy, given as drawn
                calls.clear()
                self.ref_call(c)
                self.assertEqual(calls, [])
                calls.clear()
                self.assertIn('"input": -1', self.findings(c, own_in * 2))
                self.assertEqual(calls, ["keyed_hash"])  # the candidate's copy alone
                peer_byte ^= 1  # the candidate's write
                self.assertIn('"input": 0', self.findings(c, own_in * 2))
                peer_byte ^= 1
                # A perturbation reads the reference's inputs: whether the call wrote them is
                # told first, by their hash (one pass over their 8 words). It updates the hash
                # (the changed word's terms, after and before): CHECK still reads the
                # candidate's copy only.
                calls.clear()
                c.hashed_words.clear()
                c.draw(checker_test.p.Reader(checker_test.draw_payload(93 + trial,
                                                                       checker.DRAW_PERTURB)))
                self.assertEqual(calls, ["keyed_hash"] * 3)
                self.assertEqual(c.hashed_words, [8, 1, 1])
                fresh = fast_compare.keyed_hash(own_in.view(torch.int64), c.input_hashes.key)
                self.assertEqual(int(c.input_hashes.values[0]), int(fresh))
                calls.clear()
                self.ref_call(c)
                # The trial's last call: the next trial's draw rewrites the reference's inputs,
                # and nothing reads them before it.
                self.assertEqual(calls, [])
                calls.clear()
                self.assertIn('"input": -1', self.findings(c, own_in * 2))
                self.assertEqual(calls, ["keyed_hash"])
                peer_byte ^= 1
                self.assertIn('"input": 0', self.findings(c, own_in * 2))
                peer_byte ^= 1
        self.assertEqual(sums, [])  # no checksum passes where the hash serves

    def test_a_hash_that_fails_during_a_trial_gives_way_to_the_comparison(self):
        c, server = self.checker(lambda x: [x * 2])
        own_in = server.host[:64].view(torch.float32)
        c.draw(checker_test.p.Reader(checker_test.draw_payload(97, checker.DRAW_TRIAL)))
        self.ref_call(c)

        def broken(*args, **kwargs):
            raise RuntimeError("the launch failed")

        c.input_hashes.hasher = types.SimpleNamespace(keyed_hash=broken, mix_term=broken,
                                                      as_int64=broken)
        c.comparer.triton = False  # as after any failing launch
        c.draw(checker_test.p.Reader(checker_test.draw_payload(98, checker.DRAW_PERTURB)))
        self.assertIsNone(c.input_hashes)  # dropped, not half-updated
        self.ref_call(c)
        self.assertIn('"input": -1', self.findings(c, own_in * 2))
        c.peer.tensor[5] ^= 1
        self.assertIn('"input": 0', self.findings(c, own_in * 2))

    def test_a_keyed_hash_that_failed_its_check_is_not_used(self):
        c, server = self.checker(lambda x: [x * 2])
        for words in (torch.int64, torch.int32):  # as_words' type, and fast_draw's
            c.comparer.keyed_ok[torch.device("cpu"), words] = False
        c.draw(checker_test.p.Reader(checker_test.draw_payload(93, checker.DRAW_TRIAL)))
        self.ref_call(c)
        self.assertIsNone(c.input_hashes)
        own_in = server.host[:64].view(torch.float32)
        self.assertTrue(torch.equal(c.peer.tensor[:64].view(torch.float32), own_in))  # given
        c.peer.tensor[:64].view(torch.float32)[0] += 1.0
        self.assertIn('"input": 0', self.findings(c, own_in * 2))

    def both_paths(self, output_damage=None, tamper=None):
        """CHECK's findings through the one-synchronization test and without it: the candidate's
        output is the expected one after `output_damage`, and `tamper` runs before CHECK."""
        found = []
        for devices in (("cpu",), ()):
            comparison.TRITON_DEVICES = devices
            c, _ = self.checker(lambda x: [x * 2])
            c._fast_draw = lambda dtype, d: None  # the same inputs on both paths
            c.draw(checker_test.p.Reader(checker_test.draw_payload(41, checker.DRAW_TRIAL)))
            self.ref_call(c)
            output = c.expected[0].clone()
            if output_damage is not None:
                output_damage(output)
            compared = []
            exact = c.comparer.compare
            c.comparer.compare = lambda *args: compared.append(1) or exact(*args)
            found.append(findings_of(self.findings(c, output, tamper)))
            if devices:
                self.assertIsNot(c.comparer.triton, False)
                self.assertTrue(c.comparer.triton_ok[torch.float32])
                # A passing call never reaches the element-by-element comparison.
                self.assertEqual(bool(compared), output_damage is not None)
        return found

    def test_each_finding_as_without_it(self):
        def wrong_value(out):
            out[9] += 1.0

        def nan(out):
            out[2] = float("nan")

        def modified_input(c):
            c.peer.tensor[4] ^= 1

        def damaged_guard(c):
            c.peer.tensor[130] ^= 1

        cases = {"valid": ({}, {"input": -1, "guard": None, "outputs": [{"mismatches": 0}]}),
                 "wrong value": ({"output_damage": wrong_value}, None),
                 "nan": ({"output_damage": nan}, None),
                 "modified input": ({"tamper": modified_input}, {"input": 0, "guard": None,
                                                                  "outputs": []}),
                 "damaged guard": ({"tamper": damaged_guard}, {"input": -1, "guard": [0, 2],
                                                                "outputs": []})}
        for name, (damage, expected) in cases.items():
            with self.subTest(name):
                at_once, one_by_one = self.both_paths(**damage)
                self.assertEqual(at_once, one_by_one)
                if expected is not None:
                    self.assertEqual(at_once, expected)
                else:
                    self.assertEqual(at_once["outputs"][0]["mismatches"], 1)

    def test_a_trials_draw_gives_and_hashes_the_inputs_it_draws(self):
        c, server = self.checker(lambda x: [x * 2])
        calls = self.spied(c)
        own_in = server.host[:64].view(torch.float32)
        peer_in = c.peer.tensor[:64].view(torch.float32)
        c.draw(checker_test.p.Reader(checker_test.draw_payload(61, checker.DRAW_TRIAL)))
        self.assertEqual(c.ungiven, [])  # nothing left for REF_CALL to give
        self.assertTrue(torch.equal(peer_in, own_in))
        self.assertEqual(c.input_hashes.words, [torch.int32])  # over the float32 elements
        self.assertEqual(int(c.input_hashes.values[0]),
                         int(fast_compare.keyed_hash(own_in.view(torch.int32),
                                                     c.input_hashes.key)))
        self.ref_call(c)
        self.assertEqual(calls, [])  # no copy, no hash
        self.assertIn('"input": -1', self.findings(c, own_in * 2))
        peer_in[3] = -peer_in[3]
        self.assertIn('"input": 0', self.findings(c, own_in * 2))
        peer_in[3] = -peer_in[3]
        c.draw(checker_test.p.Reader(checker_test.draw_payload(62, checker.DRAW_PERTURB)))
        self.assertEqual(int(c.input_hashes.values[0]),
                         int(fast_compare.keyed_hash(own_in.view(torch.int32),
                                                     c.input_hashes.key)))
        self.ref_call(c)
        self.assertTrue(torch.equal(peer_in, own_in))  # the perturbed element, given
        self.assertIn('"input": -1', self.findings(c, own_in * 2))
        # The timing draw of another process (torch.compile's) draws the same values.
        other, other_server = self.checker(lambda x: [x * 2])
        c.draw(checker_test.p.Reader(checker_test.draw_payload(63, checker.DRAW_TIMING_SHARED)))
        other.draw(checker_test.p.Reader(checker_test.draw_payload(63, checker.DRAW_TIMING)))
        self.assertTrue(torch.equal(other_server.host[:64], server.host[:64]))
        self.assertTrue(torch.equal(c.peer.tensor[:64], server.host[:64]))

    def test_what_the_first_read_found_is_not_read_again(self):
        c, _ = self.checker(lambda x: [x * 2])
        c.draw(checker_test.p.Reader(checker_test.draw_payload(71, checker.DRAW_TRIAL)))
        self.ref_call(c)
        c.peer.tensor[4] ^= 1  # the candidate used its input as scratch
        first_read = c._first_read

        def then_restored(*args):  # by its thread, just after the first read
            found = first_read(*args)
            c.peer.tensor[4] ^= 1
            return found

        c._first_read = then_restored
        self.assertEqual(findings_of(self.findings(c, c.expected[0]))["input"], 0)

    def test_the_checksum_sees_a_change_and_a_swap(self):
        w = torch.arange(3 * fast_compare.BLOCK + 5, dtype=torch.int32)
        base = fast_compare.checksum(w)
        changed, swapped = w.clone(), w.clone()
        changed[-1] += 1
        swapped[[0, 1]] = swapped[[1, 0]]
        self.assertNotEqual(fast_compare.checksum(changed), base)
        self.assertNotEqual(fast_compare.checksum(swapped), base)
        self.assertEqual(fast_compare.checksum(w.clone()), base)


# (protocol dtype code, elements, byte offset): inputs read as words of 2, 4 and 8 bytes, an
# empty one, an integer one with negative values; the output at OUT.
MIXED = [(2, 7, 0), (4, 5, 16), (0, 0, 40), (1, 4, 40), (3, 3, 72), (0, 3, 80)]
OUT = (0, 4, 128)


def mixed_spec():
    spec = struct.pack("=II", len(MIXED), 1)
    for dtype, n, offset in MIXED + [OUT]:
        spec += struct.pack("=iIqIQ", dtype, 1, n, 0, offset)
    return spec


def mixed_draw(seed, mode):
    dists = b"".join(
        struct.pack("=B6di", 1, 0.0, 1.0, -1e5, 1e5, -6.0, 6.0, 0) if dtype == 4 else
        struct.pack("=B6di", 0, 0.0, 1.0, 0.0, 1.0, -6.0, 6.0, 0) for dtype, _, _ in MIXED)
    return checker_test.p.Reader(mixed_spec() + struct.pack("=QB", seed, mode) + dists)


@unittest.skipIf(fast_compare is None, "Triton is not installed")
class MixedInputsHashTest(unittest.TestCase):
    """The keyed hashes of inputs of several word widths stay those of the reference's inputs
    through perturbations (several before one REF_CALL) and in-place writes, and CHECK finds a
    change of any input's last byte."""

    def setUp(self):
        self.old = comparison.TRITON_DEVICES
        comparison.TRITON_DEVICES = ("cpu",)

    def tearDown(self):
        comparison.TRITON_DEVICES = self.old

    def run_trials(self, forward):
        c, server = checker_test.reference_runner(forward)
        ref_call = lambda: c.reference_call(  # noqa: E731
            checker_test.p.Reader(mixed_spec() + struct.pack("=B", 0)))

        def hashes_hold():
            c._settle_inputs()  # as the next read of the reference's inputs does
            h = c.input_hashes
            self.assertIsNotNone(h)
            for (offset, nbytes), value in zip(h.ranges, h.values):
                words = comparison.as_words(server.host[offset:offset + nbytes],
                                            c.peer.tensor[offset:offset + nbytes])[0]
                self.assertEqual(int(value), int(fast_compare.keyed_hash(words, h.key)))

        def found():
            summary = checker_test.check_summary(c, mixed_spec(), OUT[2], c.expected[0])
            return json.loads(summary)["input"]

        widths = set()
        for trial in range(3):
            c.draw(mixed_draw(100 + trial, checker.DRAW_TRIAL))
            ref_call()
            hashes_hold()
            self.assertEqual(found(), -1)
            for k in range(3):
                c.draw(mixed_draw(200 + 10 * trial + k, checker.DRAW_PERTURB))
                hashes_hold()
            ref_call()
            hashes_hold()
            self.assertEqual(found(), -1)
            for i, (offset, nbytes) in enumerate(c.input_hashes.ranges):
                widths.add(comparison.as_words(server.host[offset:offset + nbytes],
                                               c.peer.tensor[offset:offset + nbytes])[0].dtype)
                if nbytes:
                    c.peer.tensor[offset + nbytes - 1] ^= 0x80
                    self.assertEqual(found(), i)
                    c.peer.tensor[offset + nbytes - 1] ^= 0x80
        self.assertTrue({torch.int16, torch.int32, torch.int64} <= widths, widths)

    @staticmethod
    def sums(inputs):
        return [torch.stack([inputs[0].float().sum(), inputs[1].float().sum(),
                             inputs[3].float().sum(), inputs[5].sum()])]

    def test_a_reference_that_leaves_its_inputs(self):
        self.run_trials(self.sums)

    def test_a_reference_that_writes_them(self):
        def writes(inputs):
            inputs[1].neg_()
            inputs[0].abs_()
            return self.sums(inputs)
        self.run_trials(writes)


def findings_of(summary):
    """CHECK's summary, a passing output's errors left out (never reported)."""
    found = json.loads(summary)
    found["outputs"] = [o if o["mismatches"] else {"mismatches": 0} for o in found["outputs"]]
    return found


if __name__ == "__main__":
    unittest.main()
