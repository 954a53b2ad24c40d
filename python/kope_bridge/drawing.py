"""The reference runner's DRAW request (checker.py): a trial's inputs drawn into the
reference's tensors from the parent's secret seed, given to the candidate's copy and hashed as
they are written where that serves, one element of each redrawn for a perturbation, or inputs
for timing. A part of Checker, which holds the state it uses (the shared memory, the recipe of
the last draw, the inputs' keyed hashes)."""
import secrets
import types

import torch

from . import protocol as p
from .comparison import as_words
from .distribution import Distribution
from .kernels import torch_dtype

# DRAW's modes (Runner::DrawMode).
DRAW_TRIAL, DRAW_PERTURB, DRAW_TIMING, DRAW_TIMING_SHARED, DRAW_GIVEN = 0, 1, 2, 3, 4


def input_seed(seed, i):
    """Input i's own seed for fast_draw (two inputs of one law must not get the same values)."""
    return (seed + i * 0x9E3779B97F4A7C15) & ((1 << 63) - 1)


def spans_apart(ranges):
    """Whether no two of the byte ranges (offset, bytes) overlap: each hashed word then belongs
    to one input."""
    spans = sorted(r for r in ranges if r[1])
    return all(a[0] + a[1] <= b[0] for a, b in zip(spans, spans[1:]))


class Drawing:
    # -- DRAW --------------------------------------------------------------------------------
    def draw(self, r):
        """Draws the call's inputs into this runner's own tensors, from the parent's secret
        seed and each input's distribution (src/eval/inputs.cc's, with torch's generator).
        Modes (Runner::DrawMode): a trial's inputs; `perturb`, one element of each input redrawn
        to a different value; `timing`, inputs TIME then calls on as they are (it uploads
        nothing over them); `timing shared`, the same and copied to the shared memory's slots.
        Any bridge process serves the timing modes (torch.compile's too): the same seed draws
        the same values in each. `given`: a trial's inputs as the parent wrote them (no
        drawing)."""
        s = self.server
        s.ready()
        spec = r.call_spec(s.arena_bytes)
        seed, mode = r.take("=Q"), r.take("=B")
        dists = [Distribution(r.take("=B"), *[r.take("=d") for _ in range(6)], r.take("=i"))
                 for _ in spec.inputs]
        if not r.at_end() or any(d.kind > 5 for d in dists) or mode > DRAW_GIVEN:
            raise p.ProtocolError("malformed DRAW")
        self.expected = None  # a CHECK needs the REF_CALL on these inputs
        if mode == DRAW_PERTURB:
            self._settle_inputs()  # a perturbation starts from the trial's inputs
        else:
            self.unsettled = None  # every input is drawn again
        if mode in (DRAW_TIMING, DRAW_TIMING_SHARED):
            ranges = [x.byte_range(s.arena_bytes) for x in spec.inputs]
            if mode == DRAW_TIMING_SHARED:
                for offset, nbytes in ranges:
                    self._peer(offset, nbytes)
            # Timing's inputs replace the trial's: a REF_CALL needs a trial's DRAW first.
            self.draws, self.ungiven, self.input_hashes = [], None, None
            self._draw(seed, False, spec, dists, give=mode == DRAW_TIMING_SHARED)
            if mode == DRAW_TIMING_SHARED:
                self._synchronize()
            s.inputs_resident = True  # until the next MAP, CALL or REF_CALL
            s.host_stale = s.mirror is not None and not s.device_shared
            return p.reply_payload()
        s.inputs_resident = False
        if mode == DRAW_GIVEN:
            self.draws = [(seed, DRAW_GIVEN, spec, dists)]
            self.ungiven, self.input_hashes = None, None  # REF_CALL gives them, hashed
            self._take_given(spec)
            return p.reply_payload()
        perturb = mode == DRAW_PERTURB
        if not perturb:
            self.draws = []
        elif not self.draws:
            raise p.ProtocolError("a perturbing DRAW before a trial's")
        self.draws.append((seed, perturb, spec, dists))
        if not perturb:
            self.ungiven, self.input_hashes = None, None  # hashed as REF_CALL gives them
            if self._gives_in_draw(spec, dists):
                self._draw_given(seed, spec, dists)
            else:
                self._draw(seed, False, spec, dists)
        else:
            changed, _ = self._draw(seed, True, spec, dists)
            if self.ungiven is not None:
                self.ungiven += [(at, size) for at, size, _ in changed]
            self._rehash(spec, changed)
        return p.reply_payload()

    def _redraw(self, draw):
        """One DRAW of the trial's recipe (self.draws) made again."""
        seed, how, spec, dists = draw
        if how == DRAW_GIVEN:
            self._take_given(spec)
        else:
            self._draw(seed, how, spec, dists)

    def _take_given(self, spec):
        """A trial's inputs as the parent wrote them into the arena's host pages (inputs
        captured where the kernel runs): copied to the own tensors where those are on the
        device; on the CPU the host pages are the own tensors."""
        s = self.server
        if s.mirror is None:
            return
        for slot in spec.inputs:
            offset, nbytes = slot.byte_range(s.arena_bytes)
            s.mirror[offset:offset + nbytes].copy_(s.host[offset:offset + nbytes])

    def _draw(self, seed, perturb, spec, dists, give=False, key=None):
        """Draws into the own inputs (with `give`, the same values into the candidate's slots;
        with `key`, fast_compare.new_key's, hashed as they are given). Returns, for each element
        a perturbation changed, its byte offset and size and its old value (a 1-element
        tensor); and with `key`, each input's keyed hash and the word type it is over.
        Floating-point inputs of a normal or uniform law are drawn by fast_draw where it works
        (the same values in every process), the rest with torch's generator."""
        s = self.server
        changed, hashes = [], []
        device = self._own(0, 0).device
        generator = torch.Generator(device=device)
        generator.manual_seed(seed & ((1 << 63) - 1))
        if perturb:  # where: drawn on the host, so that no request waits for the device
            places = torch.Generator()
            places.manual_seed(seed & ((1 << 63) - 1))
        for i, (slot, d) in enumerate(zip(spec.inputs, dists)):
            offset, nbytes = slot.byte_range(s.arena_bytes)
            t = self._own(offset, nbytes).view(torch_dtype(slot.dtype))
            if perturb:
                if t.numel():
                    j, old = self._perturb(t, d, generator, places)
                    changed.append((offset + j * t.element_size(), t.element_size(), old))
                continue
            peer = self._peer(offset, nbytes).view(t.dtype) if give else None
            fast = self._fast_draw(t.dtype, d)
            if fast is not None:
                h = fast.draw(t, input_seed(seed, i), d.kind, d.mean, d.stddev, d.low, d.high,
                              peer=peer, key=key)
                if key is not None:
                    hashes.append((h, fast.WORDS[t.dtype]))
                continue
            if t.numel():
                d.fill(t, generator)
            if key is not None:
                own_words, peer_words = as_words(self._own(offset, nbytes),
                                                 self._peer(offset, nbytes))
                hashes.append((self.comparer.triton.keyed_hash(own_words, key,
                                                               copy_to=peer_words),
                               own_words.dtype))
            elif give:
                peer.copy_(t)
        # Not waited for: this runner's next request runs after it on the same stream, and
        # whatever gives the inputs to another process synchronizes first.
        return changed, hashes

    def _fast_draw(self, dtype, d):
        """fast_draw where it serves `dtype` and the law `d` on the own tensors' device (and
        passed draw_works there), else None."""
        device = self._own(0, 0).device
        if self.comparer.triton_module(device) is None:
            return None
        from . import fast_draw  # Triton is there
        if not fast_draw.serves(dtype, d.kind, d.low, d.high):
            return None
        if (device, dtype) not in self.draw_ok:
            try:
                self.draw_ok[device, dtype] = fast_draw if fast_draw.draw_works(
                    dtype, device) else None
            except Exception:  # noqa: BLE001 (no compiler, a failing launch)
                self.draw_ok[device, dtype] = None
        return self.draw_ok[device, dtype]

    def _gives_in_draw(self, spec, dists):
        """Whether a trial's DRAW gives the candidate its inputs and hashes them as it draws
        them (every input drawn by fast_draw or hashable by keyed_hash, the shared memory
        there, no two inputs sharing a word); else REF_CALL gives them."""
        s = self.server
        if self.peer is None:
            return False
        try:
            ranges = [x.byte_range(s.arena_bytes) for x in spec.inputs]
            for offset, nbytes in ranges:
                self._peer(offset, nbytes)
        except p.ProtocolError:
            return False
        if not ranges or not spans_apart(ranges):
            return False
        for slot, d, (offset, nbytes) in zip(spec.inputs, dists, ranges):
            fast = self._fast_draw(torch_dtype(slot.dtype), d)
            own = self._own(offset, nbytes)
            words = fast.WORDS[torch_dtype(slot.dtype)] if fast is not None else \
                as_words(own, self._peer(offset, nbytes))[0].dtype
            if not self.comparer.keyed_usable(words, own.device):
                return False
        return True

    def _draw_given(self, seed, spec, dists):
        """A trial's draw into both copies, hashed as it is written (_gives_in_draw): REF_CALL
        then gives nothing. On a failing launch, drawn again the plain way (REF_CALL gives)."""
        hasher = self.comparer.triton
        key = hasher.new_key(secrets.randbits(124))
        try:
            _, hashed = self._draw(seed, False, spec, dists, give=True, key=key)
        except Exception:  # noqa: BLE001 (a launch that failed, the GPU's memory full: this
            # draw only; the kernel passed draw_works, and every process must keep drawing the
            # same values for timing)
            self._draw(seed, False, spec, dists)
            return
        self.input_hashes = types.SimpleNamespace(
            ranges=[x.byte_range(self.server.arena_bytes) for x in spec.inputs],
            values=[h for h, _ in hashed], words=[w for _, w in hashed], key=key, hasher=hasher)
        self.ungiven = []

    def _synchronize(self):
        if self._own(0, 0).device.type == "cuda":
            torch.cuda.synchronize()

    @staticmethod
    def _perturb(t, d, generator, places):
        """Redraws one element of the 1-D tensor `t`, at an index `places` (a host generator)
        draws: the first of 16 values drawn from `d` that differs from it in its bytes (the
        last where none does: a law of one value). Nothing waits for the device. Returns the
        index and the old value (a 1-element tensor on t's device)."""
        j = int(torch.randint(0, t.numel(), (1,), generator=places))
        old = t[j:j + 1].clone()
        new = d.values(16, t.dtype, generator, t.device).to(t.dtype)
        width = t.element_size()
        differs = (new.view(torch.uint8).view(16, width) !=
                   old.view(torch.uint8).view(1, width)).any(dim=1)
        pick = torch.where(differs.any(), differs.to(torch.int32).argmax(), 15)
        t[j:j + 1].copy_(new.index_select(0, pick.view(1)))
        return j, old

    def _rehash(self, spec, changed):
        """Brings input_hashes up to date with a perturbation of the reference's inputs: each
        changed word's term out, its new one in (keyed_hash over the words before and after,
        from the word's index), on the device. Drops them where they do not cover this call's
        inputs, or on any failure (REF_CALL then checksums, CHECK compares both copies)."""
        h = self.input_hashes
        if h is None:
            return
        self.input_hashes = None
        if h.ranges != [x.byte_range(self.server.arena_bytes) for x in spec.inputs]:
            return
        try:
            values = list(h.values)
            for at, size, old in changed:
                i = next(k for k, (o, n) in enumerate(h.ranges) if o <= at < o + n)
                offset, nbytes = h.ranges[i]
                words = self._own(offset, nbytes).view(h.words[i])
                width = words.element_size()
                first, last = (at - offset) // width, (at + size - 1 - offset) // width
                after = words[first:last + 1]
                before = after.clone()
                start = at - offset - first * width
                before.view(torch.uint8)[start:start + size].copy_(old.view(torch.uint8))
                # On the device, not waited for: the new words' terms in, the old ones' out.
                values[i] = values[i] + h.hasher.keyed_hash(after, h.key, start=first) - \
                    h.hasher.keyed_hash(before, h.key, start=first)
        except Exception:  # noqa: BLE001 (the hash is dropped, never trusted half-updated)
            return
        h.values = values
        self.input_hashes = h
