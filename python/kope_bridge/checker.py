"""The reference runner as the checker of a PyTorch candidate's tensors (the parent's side:
src/eval/verification.cc and src/eval/reference_check.cc).

The reference shares memory with the candidate's runner (SHARE: device memory on a GPU, through
shared_device, else a memfd) and lays the candidate's tensors out there exactly as in its own
arena. Verification then moves no tensor between host and GPU: DRAW draws the inputs into the
reference's tensors from the parent's secret seed (drawing.py); REF_CALL gives the candidate's slots what
they lack (a trial's inputs, a perturbation's elements), runs the reference, keeps its results
as the expected outputs, and draws the trial's inputs again from the same seeds when a checksum
of its own inputs changed over the call (a reference may write its inputs in place; the
candidate's memory is never read back as inputs); POISON fills the candidate's outputs and
guards; CHECK compares the candidate's inputs (on a GPU by a secret-keyed hash of what REF_CALL
gave, after a trial's whole copy), guards and outputs with the reference's, with the rules of
src/eval/compare.cc, and answers a summary (JSON). The candidate's process never sees
the reference's outputs.
"""
import fcntl
import hashlib
import json
import mmap
import os
import secrets
import struct
import types

import torch

from . import protocol as p
from . import shared_device
from .comparison import Comparer, INT_OF_SIZE, as_words, passing, same_bytes
from .drawing import (DRAW_GIVEN, DRAW_PERTURB, DRAW_TIMING,  # noqa: F401
                      DRAW_TIMING_SHARED, DRAW_TRIAL, Drawing, input_seed, spans_apart)
from .kernels import compared_dtype, torch_dtype

# Outputs up to this many bytes are fingerprinted by a hash of their bytes: a position-weighted
# sum of a few bytes collides (a loss's 4 bytes, two trials apart, once in a few hundred).
SMALL_OUTPUT_BYTES = 4096

# Allocations shared with a candidate that stay while it maps another size: all those up to this
# many bytes, and one larger.
KEPT_SHARED_BYTES = 256 << 20


class Checker(Drawing):
    def __init__(self, server):
        self.server = server
        self.peer = None  # the memory shared with the candidate: nbytes, tensor, keep (owners)
        self.peers = {}  # every allocation shared with that candidate, by bytes
        self.peer_token = None  # the candidate they are shared with
        self.guard = None  # the guard bytes of the last POISON, on the device
        self.guard_bytes = b""
        self.comparer = Comparer()
        self.draws = []  # the DRAW requests since the last full draw: the inputs' recipe
        # What the candidate's copy of the inputs lacks: None, all of them (a trial's DRAW);
        # else the byte ranges of the elements perturbed since the last REF_CALL.
        self.ungiven = None
        self.expected = None  # the last REF_CALL's outputs, flat, on the reference's device
        # Keyed hashes of the reference's inputs as the candidate must have them (fast_compare.
        # keyed_hash under a key secret and fresh for each trial), with the byte ranges
        # they cover: made while a trial's REF_CALL copies them to the candidate, brought up to
        # date by a perturbation. REF_CALL tells the reference's own in-place writes by them
        # (one pass after its call), CHECK the candidate's (one pass over its copy). None
        # where the hash does not serve: checksums before and after the call, and CHECK
        # compares the two copies.
        self.input_hashes = None  # ranges, values (0-d int64 tensors), key, hasher (the module)
        # After a REF_CALL, what tells whether the call wrote the reference's own inputs (their
        # ranges, the hashes or checksums from before it): looked at only when those inputs are
        # read again (_settle_inputs). A trial's last REF_CALL is followed by the next trial's
        # draw, which rewrites them: its pass over the inputs is never made.
        self.unsettled = None
        self.draw_ok = {}  # (device, dtype) -> fast_draw where it passed draw_works, else None

    # -- SHARE -------------------------------------------------------------------------------
    def share(self, r):
        """Memory for the candidate `token` names, `nbytes` of it: each size of the same
        candidate is kept while it maps them in turn (its check sizes, its bench size, then
        again after timing: the export and the release cost milliseconds each), all of them
        fresh for another candidate (a process that mapped the last candidate's memory may not
        have ended yet). Of the sizes not in use, only small ones and one large one stay."""
        nbytes, token = r.take("=Q"), r.take("=Q")
        if not r.at_end() or nbytes == 0:
            raise p.ProtocolError("malformed SHARE")
        if self.peer_token != token:
            self.release()
            self.peer_token = token
        peer = self.peers.get(nbytes)
        if peer is None:
            if nbytes > KEPT_SHARED_BYTES:
                for size in [n for n in self.peers if n > KEPT_SHARED_BYTES]:
                    released = self.peers.pop(size)
                    if released is self.peer:
                        self.peer = None
                    self._release(released)
            peer = self.peers[nbytes] = self._allocate(nbytes)
        if peer is not self.peer:
            self.peer = peer
            # Memory just mapped holds none of the inputs, and no call of it has been checked.
            self.ungiven, self.input_hashes, self.expected = None, None, None
        return p.reply_payload(), self.peer.fd

    def _allocate(self, nbytes):
        if self.server.device == "cpu":
            fd = os.memfd_create("kope-shared", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            try:
                os.ftruncate(fd, nbytes)
                # Sealed like the parent's arenas: the candidate cannot shrink it under the
                # checker.
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                            fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
                mm = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            except BaseException:
                os.close(fd)
                raise
            return types.SimpleNamespace(nbytes=nbytes, fd=fd, keep=mm,
                                         tensor=torch.frombuffer(mm, dtype=torch.uint8))
        allocation = shared_device.export(nbytes)
        return types.SimpleNamespace(nbytes=nbytes, fd=allocation.fd, keep=allocation,
                                     tensor=shared_device.tensor(torch, allocation,
                                                                 self.server.device))

    def release(self):
        """Releases every allocation shared with the current candidate."""
        peers, self.peers, self.peer, self.peer_token = self.peers, {}, None, None
        for peer in peers.values():
            self._release(peer)

    @staticmethod
    def _release(peer):
        peer.tensor = None
        if isinstance(peer.keep, mmap.mmap):
            try:
                peer.keep.close()
            finally:
                os.close(peer.fd)
        else:
            peer.keep.close()  # the candidate's mapping keeps the memory until it unmaps

    def _peer(self, offset, nbytes):
        if self.peer is None:
            raise p.ProtocolError("no memory shared")
        if offset + nbytes > self.peer.nbytes:
            raise p.ProtocolError("range leaves the shared memory")
        return self.peer.tensor[offset:offset + nbytes]

    def _own(self, offset, nbytes):
        s = self.server
        base = s.mirror if s.mirror is not None else s.host
        return base[offset:offset + nbytes]

    # -- REF_CALL ----------------------------------------------------------------------------
    def reference_call(self, r):
        """Gives the candidate the inputs it lacks (all of a trial's, the elements a
        perturbation changed), runs the reference and keeps its outputs as the expected ones;
        with `summarize`, answers their fingerprints. A failure is the serve loop's
        KERNEL_ERROR (the task's reference failed)."""
        s = self.server
        s.ready()
        spec = r.call_spec(s.arena_bytes)
        summarize = r.take("=B")
        if not r.at_end():
            raise p.ProtocolError("trailing bytes after REF_CALL")
        if not self.draws:
            raise p.ProtocolError("REF_CALL before DRAW")
        inputs_ranges = [x.byte_range(s.arena_bytes) for x in spec.inputs]
        for offset, nbytes in inputs_ranges:
            self._peer(offset, nbytes)
        s.inputs_resident = False
        self._settle_inputs()
        if self.ungiven is None:
            self.input_hashes = self._give_inputs_hashed(inputs_ranges)
        else:
            self._give_inputs(self.ungiven)
        self.ungiven = []
        self.expected = None  # the last call's outputs go before this call's are made
        hashed = self._hashes_for(inputs_ranges)
        before = self._input_sums(inputs_ranges) if hashed is None else None
        inputs, outputs = s.tensors(spec)
        ns, results, _ = s.kernel.timed(inputs, None, s.host_address)
        self.expected = self._kept(s.kernel.checked(results, outputs))
        del results
        if hashed is not None:  # as they are now: a perturbation updates input_hashes
            hashed = types.SimpleNamespace(values=list(hashed.values), key=hashed.key,
                                           hasher=hashed.hasher, words=hashed.words)
        self.unsettled = (inputs_ranges, hashed, before)
        summary = [self._fingerprint(e, p.DTYPES[x.dtype][1])
                   for e, x in zip(self.expected, spec.outputs)] if summarize else None
        self._synchronize()
        return p.reply_payload(ns=[ns], message=json.dumps({"outputs": summary}) if summarize
                               else "")

    def _kept(self, results):
        """The reference's outputs as the expected ones: flat, contiguous, 8-byte aligned, on
        this runner's device. Copied only where they are not: an output in the reference's own
        arena (a reference that returns its input, written in place: a redraw of the inputs
        must not change it), a strided view, a view at an odd offset, one on another device."""
        base = self._own(0, 0)
        arena = base.untyped_storage().data_ptr()
        kept = []
        for t in results:
            if t.device != base.device:
                t = t.to(base.device, memory_format=torch.contiguous_format)
            elif t.untyped_storage().data_ptr() == arena or not t.is_contiguous() or \
                    t.data_ptr() % 8:
                t = t.clone(memory_format=torch.contiguous_format)
            t = t.reshape(-1)
            kept.append(t.view(torch.uint8) if t.dtype == torch.bool else t)  # compared_dtype
        return kept

    def _settle_inputs(self):
        """Before the reference's own inputs are read again after a REF_CALL: if the call wrote
        them in place, they are drawn again from the trial's seeds (and CHECK compares the
        candidate's copy with them). Told from the reference's own memory, which no other
        process reaches: a comparison with the candidate's copy would miss a candidate that
        writes it as the reference does."""
        if self.unsettled is None:
            return
        ranges, hashed, before = self.unsettled
        if self._wrote_inputs(ranges, hashed, before):
            for draw in self.draws:
                self._redraw(draw)
        self.unsettled = None  # only once settled: a failure here leaves it to the next read

    def _hashes_for(self, ranges):
        """input_hashes where they cover these byte ranges, else None."""
        if self.input_hashes is None or self.input_hashes.ranges != ranges:
            return None
        return self.input_hashes

    def _wrote_inputs(self, ranges, hashed, sums_before):
        """Whether the reference's call changed its own inputs: their keyed hashes against
        `hashed` (one pass), else their checksums against `sums_before`. A hash that fails is
        dropped and the answer is yes (drawing the inputs again is always right)."""
        if hashed is None:
            return self._input_sums(ranges) != sums_before
        try:
            now = [hashed.hasher.keyed_hash(self._own(o, n).view(w), hashed.key)
                   for (o, n), w in zip(ranges, hashed.words)]
            return bool(torch.stack([a != b for a, b in zip(now, hashed.values)]).any())
        except Exception:  # noqa: BLE001 (a failing launch)
            self.input_hashes = None
            return True

    def _input_sums(self, ranges):
        """A position-weighted sum of each of this runner's inputs."""
        return [self.comparer.checksum(self._own(o, n)) for o, n in ranges]

    def _give_inputs(self, ranges):
        for offset, nbytes in ranges:
            self._peer(offset, nbytes).copy_(self._own(offset, nbytes))

    def _give_inputs_hashed(self, ranges):
        """_give_inputs, and the keyed hashes of what it gave, in the copy's one read (under a
        fresh key); None, the inputs given all the same, where the hash does not serve."""
        pairs = [as_words(self._own(offset, nbytes), self._peer(offset, nbytes))
                 for offset, nbytes in ranges]
        if pairs and spans_apart(ranges) and all(self.comparer.keyed_usable(own.dtype, own.device)
                                   for own, _ in pairs):
            hasher = self.comparer.triton
            key = hasher.new_key(secrets.randbits(124))
            try:
                values = [hasher.keyed_hash(own, key, copy_to=peer) for own, peer in pairs]
                return types.SimpleNamespace(ranges=list(ranges), values=values, key=key,
                                             hasher=hasher, words=[own.dtype for own, _ in pairs])
            except Exception:  # noqa: BLE001 (a failing launch: compared byte by byte)
                for own, _ in pairs:
                    self.comparer.keyed_ok[own.device, own.dtype] = False
        self._give_inputs(ranges)
        return None

    def _fingerprint(self, expected, size):
        """Whether there are several elements, all equal, and a fingerprint of the output's
        bytes that changes when they do (the parent rejects a reference whose output ignores
        its inputs: as src/eval/verification.cc, with a hash of its own): a hash of a small
        output's bytes, else the checksum of its elements, which tells a constant output in
        the same one pass."""
        raw = expected.view(torch.uint8)
        words = raw.view(getattr(torch, INT_OF_SIZE[size][0]))
        if raw.numel() <= SMALL_OUTPUT_BYTES:
            digest = hashlib.blake2b(bytes(raw.cpu().tolist()), digest_size=8).digest()
            fingerprint = int.from_bytes(digest, "little")
            constant = words.numel() > 1 and bool((words == words[0]).all())
        else:
            fingerprint, constant = self.comparer.checksum_and_constant(words)
        return {"constant": constant, "fingerprint": str(fingerprint)}

    # -- POISON ------------------------------------------------------------------------------
    def poison(self, r):
        """Fills each candidate output with one element's bit pattern, and the guard after it."""
        guard = r.take_bytes(1 << 16)
        items = []
        for _ in range(r.take("=I")):
            offset, nbytes, pattern = r.take("=Q"), r.take("=Q"), r.take_bytes(8)
            if len(pattern) not in INT_OF_SIZE or offset % len(pattern) or nbytes % len(pattern):
                raise p.ProtocolError("bad poison pattern")
            self._peer(offset, nbytes + len(guard))
            items.append((offset, nbytes, pattern))
        if not r.at_end():
            raise p.ProtocolError("trailing bytes after POISON")
        device = self.peer.tensor.device
        if self.guard is None or self.guard_bytes != guard:
            self.guard = torch.frombuffer(bytearray(guard), dtype=torch.uint8).to(device)
            self.guard_bytes = guard
        for offset, nbytes, pattern in items:
            name, code = INT_OF_SIZE[len(pattern)]
            value = struct.unpack("=" + code, pattern)[0]
            self._peer(offset, nbytes).view(getattr(torch, name)).fill_(value)
            self._peer(offset + nbytes, len(guard)).copy_(self.guard)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return p.reply_payload()

    # -- CHECK -------------------------------------------------------------------------------
    def check(self, r):
        """The candidate's last call, as src/eval/verification.cc checks it on the host: inputs
        unchanged, guards intact, outputs within tolerance of the reference's (the first
        failure ends the check)."""
        s = self.server
        s.ready()
        spec = r.call_spec(s.arena_bytes)
        tolerances = [(r.take("=d"), r.take("=d")) for _ in spec.outputs]
        if not r.at_end():
            raise p.ProtocolError("trailing bytes after CHECK")
        if self.guard is None:
            raise p.ProtocolError("CHECK before POISON")
        if self.expected is None or len(self.expected) != len(spec.outputs) or any(
                e.numel() * e.element_size() != x.byte_range(s.arena_bytes)[1]
                for e, x in zip(self.expected, spec.outputs)):
            raise p.ProtocolError("CHECK before REF_CALL, or not of its call")
        result = {"input": -1, "guard": None, "outputs": []}
        if self._hashes_for([x.byte_range(s.arena_bytes) for x in spec.inputs]) is None:
            self._settle_inputs()  # the candidate's inputs are compared with the reference's
        first = self._first_read(spec, tolerances)
        if first is None:
            self._settle_inputs()
        for i, slot in enumerate(spec.inputs):
            offset, nbytes = slot.byte_range(s.arena_bytes)
            if (first.input_differs[i] if first else
                    not same_bytes(self._peer(offset, nbytes), self._own(offset, nbytes))):
                result["input"] = i
                return p.reply_payload(message=json.dumps(result))
        for o, slot in enumerate(spec.outputs):
            offset, nbytes = slot.byte_range(s.arena_bytes)
            g = self._peer(offset + nbytes, self.guard.numel())
            if first.guard_damaged[o] if first else not torch.equal(g, self.guard):
                result["guard"] = [o, int((g != self.guard).to(torch.uint8).argmax())]
                break
            if first and not first.output_fails[o]:
                result["outputs"].append(passing())
                continue
            dtype = compared_dtype(slot.dtype)
            c = self.comparer.compare(self.expected[o], self._peer(offset, nbytes).view(dtype),
                                      *tolerances[o])
            result["outputs"].append(c)
            if c["mismatches"]:
                break
        return p.reply_payload(message=json.dumps(result))

    def _first_read(self, spec, tolerances):
        """CHECK's tests of every input, guard and output, read once and decided with one
        synchronization (on a device where fast_compare's kernel serves every output's dtype):
        which inputs differ from the reference's, which guards are damaged, which outputs fail
        the fast test. Input and guard answers are exact and final: a candidate's thread that
        puts things back later is not read again. An output that fails the fast test goes
        through the exact rules (NaN and infinities always do) for its details. None where the
        test is not available: CHECK reads element by element. On a GPU a check size's CHECK
        otherwise synchronizes after each comparison and launches a dozen small kernels per
        output."""
        s = self.server
        if self.peer is None:
            return None
        device = self.peer.tensor.device
        dtypes = [compared_dtype(x.dtype) for x in spec.outputs]
        comparer = self.comparer
        if not dtypes or not all(comparer.triton_usable(d, device) for d in dtypes):
            return None
        try:
            flags = []
            hashed = self._hashes_for([x.byte_range(s.arena_bytes) for x in spec.inputs])
            for i, slot in enumerate(spec.inputs):
                offset, nbytes = slot.byte_range(s.arena_bytes)
                if hashed is not None:  # the candidate's copy alone, read once
                    words = self._peer(offset, nbytes).view(hashed.words[i])
                    flags.append(hashed.hasher.keyed_hash(words, hashed.key) != hashed.values[i])
                else:
                    flags.append(comparer.triton.differ(
                        *as_words(self._peer(offset, nbytes), self._own(offset, nbytes))))
            for k, slot in enumerate(spec.outputs):
                offset, nbytes = slot.byte_range(s.arena_bytes)
                flags.append((self._peer(offset + nbytes, self.guard.numel()) != self.guard).any())
                flags.append(comparer.triton.failing(
                    self.expected[k], self._peer(offset, nbytes).view(dtypes[k]),
                    comparer.bounds(tolerances[k], device)) != 0)
            found = torch.stack(flags).tolist() if flags else []
        except Exception:  # noqa: BLE001 (the element-by-element path says what went wrong)
            return None
        n = len(spec.inputs)
        return types.SimpleNamespace(input_differs=found[:n], guard_damaged=found[n::2],
                                     output_fails=found[n + 1::2])
