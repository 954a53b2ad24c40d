"""Tests of the reference runner's checks (checker.py, comparison.py, distribution.py) that need
no runner: the comparison must
give what src/eval/compare.cc gives (verdict, count, first failure, errors), and inputs must be
drawn from their distributions. Run by ctest: python3 -m unittest kope_bridge.checker_test."""
import math
import struct
import types
import unittest
from unittest import mock

import torch

from . import checker
from . import comparison
from . import distribution as draws
from . import kernels
from . import protocol as p
from . import serve


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


def spec_payload(n=16, out_offset=64):
    """A call of one float32 input of n elements at offset 0 and an output at out_offset."""
    spec = struct.pack("=II", 1, 1)
    for offset in (0, out_offset):
        spec += struct.pack("=iIqIQ", 0, 1, n, 0, offset)
    return spec


def draw_payload(seed, mode, n=16, out_offset=64):
    """DRAW for spec_payload's call."""
    dist = struct.pack("=B6di", 0, 0.0, 1.0, 0.0, 1.0, -6.0, 6.0, 8)
    return spec_payload(n, out_offset) + struct.pack("=QB", seed, mode) + dist


def reference_runner(forward):
    """A checker on a host arena whose reference is `forward` (all the call's inputs -> its
    outputs)."""
    c, server = runner_with_arena(shared=True)
    server.kernel = types.SimpleNamespace(
        timed=lambda inputs, flush, host: (1000, forward(inputs), 0),
        checked=kernels.TorchKernel.checked)
    server.host_address = 0
    server.view = lambda base, slot: serve.Server.view(server, base, slot)
    server.tensors = lambda spec: serve.Server.tensors(server, spec)
    return c, server


def check_summary(c, spec, out_offset, candidate_output, tamper=None):
    """CHECK's summary (JSON) of the call `spec` after POISON, the candidate's write of
    `candidate_output` (float32) at out_offset, and `tamper`."""
    guard = bytes(range(16))
    nbytes = 4 * candidate_output.numel()
    c.poison(p.Reader(struct.pack("=I", 16) + guard + struct.pack("=IQQ", 1, out_offset, nbytes) +
                      struct.pack("=I", 4) + struct.pack("=i", -1)))
    c.peer.tensor[out_offset:out_offset + nbytes].view(torch.float32).copy_(candidate_output)
    if tamper is not None:
        tamper(c)
    reply = p.Reader(c.check(p.Reader(spec + struct.pack("=dd", 1e-5, 1e-6))))
    reply.take("=IiQQI")  # status, rc, flushed and copied bytes, no timings
    return reply.string()


def runner_with_arena(nbytes=256, shared=False):
    """A checker whose runner has a host arena (no GPU), and memory it shares when asked."""
    server = types.SimpleNamespace(torch=torch, device="cpu", mirror=None,
                                   host=torch.zeros(nbytes, dtype=torch.uint8),
                                   arena_bytes=nbytes, inputs_resident=False, device_shared=False,
                                   ready=lambda: None)
    c = checker.Checker(server)
    if shared:
        c.peer = types.SimpleNamespace(nbytes=nbytes, tensor=torch.zeros(nbytes, dtype=torch.uint8))
    return c, server


class ShareTest(unittest.TestCase):
    """SHARE on the host (memfds): one allocation per size and candidate."""

    @staticmethod
    def share(c, nbytes, token):
        reply, fd = c.share(p.Reader(struct.pack("=QQ", nbytes, token)))
        return c.peer, fd

    def test_a_candidates_sizes_are_kept_while_it_maps_them_in_turn(self):
        c, _ = runner_with_arena()
        check, _ = self.share(c, 4096, 7)
        bench, _ = self.share(c, 1 << 20, 7)
        c.input_hashes, c.ungiven = object(), []  # the bench size's state
        again, _ = self.share(c, 4096, 7)
        self.assertIs(again, check)  # the same memory, not a fresh export
        self.assertIsNone(c.input_hashes)  # and nothing known about what it holds
        self.assertIsNone(c.ungiven)
        self.assertIs(self.share(c, 1 << 20, 7)[0], bench)

    def test_another_candidate_gets_fresh_memory_of_every_size(self):
        c, _ = runner_with_arena()
        first, _ = self.share(c, 4096, 7)
        first.tensor[:4] = 9
        fresh, _ = self.share(c, 4096, 8)
        self.assertIsNot(fresh, first)
        self.assertFalse(bool(fresh.tensor.ne(0).any()))
        self.assertIsNone(first.tensor)  # released
        self.assertEqual(list(c.peers), [4096])

    def test_one_large_allocation_stays_besides_the_one_in_use(self):
        c, _ = runner_with_arena()
        with mock.patch.object(checker, "KEPT_SHARED_BYTES", 8192):
            small, _ = self.share(c, 4096, 1)
            large, _ = self.share(c, 16384, 1)
            self.assertEqual(sorted(c.peers), [4096, 16384])
            other, _ = self.share(c, 32768, 1)  # a second large size replaces the first
            self.assertEqual(sorted(c.peers), [4096, 32768])
            self.assertIsNone(large.tensor)
            self.assertIs(self.share(c, 4096, 1)[0], small)


class TimingDrawTest(unittest.TestCase):
    def test_timing_shared_draws_own_inputs_and_gives_them_to_the_shared_memory(self):
        c, server = runner_with_arena(shared=True)
        c.draw(p.Reader(draw_payload(99, checker.DRAW_TIMING_SHARED)))
        own, peer = server.host[:64], c.peer.tensor[:64]
        self.assertTrue(bool(own.view(torch.float32).ne(0).all()))
        self.assertTrue(torch.equal(own, peer))
        self.assertFalse(bool(c.peer.tensor[64:].ne(0).any()))  # outputs are not touched
        self.assertTrue(server.inputs_resident)  # TIME uploads nothing over them
        self.assertEqual(c.draws, [])  # a trial's recipe is not a timing draw's

    def test_the_same_seed_draws_the_same_inputs_in_another_process(self):
        a, sa = runner_with_arena(shared=True)
        b, sb = runner_with_arena()
        a.draw(p.Reader(draw_payload(5, checker.DRAW_TIMING_SHARED)))
        b.draw(p.Reader(draw_payload(5, checker.DRAW_TIMING)))
        self.assertTrue(torch.equal(sa.host[:64], sb.host[:64]))
        c, sc = runner_with_arena()
        c.draw(p.Reader(draw_payload(6, checker.DRAW_TIMING)))
        self.assertFalse(torch.equal(sa.host[:64], sc.host[:64]))

    def test_timing_shared_without_shared_memory_is_refused(self):
        c, _ = runner_with_arena()
        with self.assertRaises(p.ProtocolError):
            c.draw(p.Reader(draw_payload(1, checker.DRAW_TIMING_SHARED)))
        with self.assertRaises(p.ProtocolError):
            c.draw(p.Reader(draw_payload(1, 4)))

    def test_an_upload_over_inputs_drawn_for_timing_is_refused(self):
        c, server = runner_with_arena()
        server.mirror = torch.zeros(256, dtype=torch.uint8)  # the device copy, on the CPU here
        c.draw(p.Reader(draw_payload(8, checker.DRAW_TIMING)))
        self.assertTrue(bool(server.mirror[:64].ne(0).any()))  # drawn into the mirror
        self.assertFalse(bool(server.host.ne(0).any()))  # the host copy holds nothing
        self.assertTrue(server.host_stale)
        spec = p.Reader(draw_payload(8, 0)).call_spec(256)
        with self.assertRaises(p.ProtocolError):
            serve.Server.upload(server, spec)

    def test_a_trial_draw_is_remembered_and_not_resident(self):
        c, server = runner_with_arena(shared=True)
        server.inputs_resident = True
        c.draw(p.Reader(draw_payload(3, checker.DRAW_TRIAL)))
        self.assertFalse(server.inputs_resident)
        self.assertEqual(len(c.draws), 1)
        self.assertFalse(bool(c.peer.tensor.ne(0).any()))  # REF_CALL gives a trial's inputs


class ReferenceCallTest(unittest.TestCase):
    """DRAW, REF_CALL, POISON and CHECK on a host arena, the reference's forward a fake."""

    def checker(self, forward):
        return reference_runner(lambda inputs: forward(inputs[0]))

    @staticmethod
    def ref_call(c):
        return c.reference_call(p.Reader(spec_payload() + struct.pack("=B", 0)))

    def test_a_perturbation_gives_the_candidate_only_the_changed_element(self):
        c, server = self.checker(lambda x: [x * 2])
        c.draw(p.Reader(draw_payload(11, checker.DRAW_TRIAL)))
        self.ref_call(c)
        peer_in = c.peer.tensor[:64].view(torch.float32)
        own_in = server.host[:64].view(torch.float32)
        self.assertTrue(torch.equal(peer_in, own_in))
        self.assertTrue(torch.equal(c.expected[0], own_in * 2))
        peer_in[3] = 1234.5  # the candidate's thread, between two calls
        c.draw(p.Reader(draw_payload(12, checker.DRAW_PERTURB)))
        self.assertEqual(int((own_in != peer_in).sum()), 2)  # the perturbed element, and 3
        self.ref_call(c)
        # Not repaired: CHECK will see it.
        self.assertEqual((own_in != peer_in).nonzero().flatten().tolist(), [3])
        self.assertTrue(torch.equal(c.expected[0], own_in * 2))

    def test_a_candidates_write_between_its_calls_is_its_modified_input(self):
        c, server = self.checker(lambda x: [x * 2])
        c.draw(p.Reader(draw_payload(21, checker.DRAW_TRIAL)))
        self.ref_call(c)
        c.peer.tensor[:64].view(torch.float32)[0] += 1.0
        c.draw(p.Reader(draw_payload(22, checker.DRAW_PERTURB)))
        self.ref_call(c)
        self.assertIn('"input": 0', self.findings(c, c.expected[0]))

    def test_a_reference_that_returns_its_input_written_in_place(self):
        c, server = self.checker(lambda x: [x.relu_()])
        c.draw(p.Reader(draw_payload(31, checker.DRAW_TRIAL)))
        self.ref_call(c)
        c._settle_inputs()  # as the next read of the reference's inputs does
        own_in = server.host[:64].view(torch.float32)
        self.assertTrue(bool((own_in < 0).any()))  # drawn again: the trial's inputs
        self.assertTrue(torch.equal(c.expected[0], own_in.relu()))  # kept apart from them
        self.assertIn('"input": -1', self.findings(c, own_in.relu()))
        c.peer.tensor[:64].view(torch.float32).relu_()  # the candidate does as the reference
        self.assertIn('"input": 0', self.findings(c, own_in.relu()))

    def test_a_candidate_that_writes_its_copy_as_the_reference_writes_its_own(self):
        holder = {}

        def reference(x):  # and, meanwhile, the candidate's thread on its copy
            holder["c"].peer.tensor[:64].view(torch.float32).relu_()
            return [x.relu_()]

        c, server = self.checker(reference)
        holder["c"] = c
        c.draw(p.Reader(draw_payload(51, checker.DRAW_TRIAL)))
        self.ref_call(c)
        c._settle_inputs()
        own_in = server.host[:64].view(torch.float32)
        self.assertTrue(bool((own_in < 0).any()))  # drawn again: its own write was seen
        self.assertIn('"input": 0', self.findings(c, own_in.relu()))

    def test_a_reference_that_starts_writing_its_inputs_later_is_still_seen(self):
        # Its first call leaves its inputs, its second (after a perturbation) writes them.
        calls = []

        def reference(x):
            calls.append(1)
            return [x.relu_() if len(calls) > 1 else x.relu()]

        for candidate_writes in (False, True):
            with self.subTest(candidate_writes=candidate_writes):
                calls.clear()
                c, server = self.checker(reference)
                c.draw(p.Reader(draw_payload(95, checker.DRAW_TRIAL)))
                self.ref_call(c)
                c.draw(p.Reader(draw_payload(96, checker.DRAW_PERTURB)))
                self.ref_call(c)
                c._settle_inputs()
                own_in = server.host[:64].view(torch.float32)
                self.assertTrue(bool((own_in < 0).any()))  # drawn again after the write
                if candidate_writes:  # as the reference wrote its own
                    c.peer.tensor[:64].view(torch.float32).relu_()
                found = self.findings(c, own_in.relu())
                self.assertIn('"input": 0' if candidate_writes else '"input": -1', found)

    def test_a_reference_that_writes_its_inputs_gets_them_back_at_every_call(self):
        c, server = self.checker(lambda x: [x.relu_()])
        own_in = server.host[:64].view(torch.float32)
        for trial in range(2):
            c.draw(p.Reader(draw_payload(70 + trial, checker.DRAW_TRIAL)))
            self.ref_call(c)
            c.draw(p.Reader(draw_payload(80 + trial, checker.DRAW_PERTURB)))
            self.assertTrue(bool((own_in < 0).any()))  # drawn again before the perturbation
            # The perturbed call ran on the trial's inputs (one element changed), not on the
            # ones the first call wrote.
            perturbed = own_in.clone()
            self.ref_call(c)
            self.assertTrue(torch.equal(c.expected[0], perturbed.relu()))
            c._settle_inputs()
            self.assertTrue(bool((own_in < 0).any()))
            self.assertIn('"input": -1', self.findings(c, own_in.relu()))

    def test_a_trials_last_reference_call_is_not_followed_by_a_pass_over_its_inputs(self):
        # Whether a REF_CALL wrote the reference's inputs is told when they are read again (a
        # perturbation, the next REF_CALL); after the trial's last call the next trial's draw
        # rewrites them, and no pass is made.
        c, _ = self.checker(lambda x: [x * 2])
        with mock.patch.object(c, "_wrote_inputs", wraps=c._wrote_inputs) as wrote:
            for trial in range(3):
                c.draw(p.Reader(draw_payload(40 + trial, checker.DRAW_TRIAL)))
                self.ref_call(c)
                c.draw(p.Reader(draw_payload(50 + trial, checker.DRAW_PERTURB)))
                self.ref_call(c)
            self.assertEqual(wrote.call_count, 3)  # once per trial, at its perturbation

    def test_strided_and_misaligned_results_are_kept_whole(self):
        for name, forward, expected in (
                ("a column", lambda x: [torch.stack([2 * x, 3 * x], 1)[:, 0]], lambda x: 2 * x),
                ("a view at 4 bytes", lambda x: [torch.cat([x[:1], 2 * x])[1:]], lambda x: 2 * x),
                ("an expansion", lambda x: [(2 * x[:1]).expand(16)],
                 lambda x: (2 * x[:1]).expand(16))):
            with self.subTest(name):
                c, server = self.checker(forward)
                c.draw(p.Reader(draw_payload(61, checker.DRAW_TRIAL)))
                c.reference_call(p.Reader(spec_payload() + struct.pack("=B", 1)))  # summarized
                own_in = server.host[:64].view(torch.float32)
                self.assertTrue(c.expected[0].is_contiguous())
                self.assertTrue(torch.equal(c.expected[0], expected(own_in)))
                self.assertIn('"mismatches": 0', self.findings(c, expected(own_in)))
                wrong = expected(own_in).clone()
                wrong[5] += 1.0
                self.assertIn('"mismatches": 1,', self.findings(c, wrong))

    def test_check_and_ref_call_out_of_order_are_refused(self):
        c, _ = self.checker(lambda x: [x * 2])
        with self.assertRaises(p.ProtocolError):
            self.ref_call(c)  # before any DRAW
        with self.assertRaises(p.ProtocolError):
            c.draw(p.Reader(draw_payload(1, checker.DRAW_PERTURB)))  # before a trial's
        c.draw(p.Reader(draw_payload(2, checker.DRAW_TRIAL)))
        with self.assertRaises(p.ProtocolError):
            self.findings(c, torch.zeros(16))  # before REF_CALL
        self.ref_call(c)
        c.draw(p.Reader(draw_payload(3, checker.DRAW_TRIAL)))
        with self.assertRaises(p.ProtocolError):
            self.findings(c, torch.zeros(16))  # not after the REF_CALL of these inputs

    def findings(self, c, candidate_output, tamper=None):
        """CHECK's summary after the candidate wrote `candidate_output` (and `tamper` ran)."""
        return check_summary(c, spec_payload(), 64, candidate_output, tamper)

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
