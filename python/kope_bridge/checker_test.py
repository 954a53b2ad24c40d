"""Tests of the reference runner's requests (checker.py) that need no runner: SHARE, DRAW for
timing, and DRAW, REF_CALL, POISON and CHECK on a host arena. Run by ctest: python3 -m unittest
kope_bridge.checker_test."""
import struct
import types
import unittest
from unittest import mock

import torch

from . import checker
from . import kernels
from . import protocol as p
from . import serve


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
            c.draw(p.Reader(draw_payload(1, checker.DRAW_GIVEN + 1)))

    def test_given_inputs_are_the_hosts_and_ref_call_gives_them(self):
        # The parent wrote the trial's inputs (captured where the kernel runs) into the host
        # pages: DRAW "given" takes them into the device copy, REF_CALL gives them whole.
        c, server = reference_runner(lambda inputs: [inputs[0] * 2])
        server.mirror = torch.zeros(256, dtype=torch.uint8)  # the device copy, on the CPU here
        given = torch.arange(16, dtype=torch.float32)
        server.host[:64].copy_(given.view(torch.uint8))
        c.draw(p.Reader(draw_payload(1, checker.DRAW_GIVEN)))
        self.assertTrue(torch.equal(server.mirror[:64], server.host[:64]))
        self.assertIsNone(c.ungiven)  # every input is given at REF_CALL

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


if __name__ == "__main__":
    unittest.main()
