"""The reference runner's draw of a trial's floating-point inputs on a GPU (checker.py's DRAW), in
one Triton kernel that writes each value where it goes and hashes it as it is written.

A trial's inputs were drawn with torch's generator into the reference's tensors, then copied to
the candidate's with their keyed hash: a draw, then a read and a write. Here Philox (four numbers per round, Box-Muller for a normal)
makes each value once, stores it in the reference's tensor and, for a trial, in the candidate's,
and adds its term of fast_compare.keyed_hash: two writes, no read. The values depend only on the
seed and the element's index, so every bridge process draws the same ones (the torch.compile
reference point's timing inputs are the reference's).

Serves float32, float16 and bfloat16 inputs with a normal or uniform law; the rest goes through
distribution.Distribution.fill. The hash is over the tensor's own elements as integer words of
their size (int32 for float32), with the element's index: the checker hashes the candidate's copy
the same way (checker.py's input_hashes record the word type). Checked once per process and
dtype before it is used (draw_works).
"""
import torch
import triton
import triton.language as tl

from .fast_compare import keyed_hash, keyed_term, new_key

# Elements per program; fixed, since the values of element i depend on it (Philox's counter of
# the four values a round makes is the program's quarter-block index).
BLOCK = 4096
QUARTER = BLOCK // 4

WORDS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
KINDS = (0, 1, 5)  # normal, uniform, positive (Distribution.kind)


@triton.jit
def _term(v, e, k1, k2, WORD: tl.constexpr):
    """v's term of keyed_hash at index e: its bits as a signed word, widened to 64 bits."""
    return keyed_term(v.to(WORD, bitcast=True).to(tl.int64).to(tl.uint64, bitcast=True), e, k1,
                      k2)


@triton.jit
def _put(own_ptr, peer_ptr, e, mask, v, low, high, k1, k2, BOUNDED: tl.constexpr,
         GIVE: tl.constexpr, HASH: tl.constexpr, WORD: tl.constexpr):
    v = v.to(own_ptr.dtype.element_ty)
    if BOUNDED:  # a value that rounded up to `high` in the element type is `low`, as uniform_'s
        lo = (tl.zeros(v.shape, dtype=tl.float32) + low).to(own_ptr.dtype.element_ty)
        v = tl.where(v.to(tl.float32) >= high, lo, v)
    tl.store(own_ptr + e, v, mask=mask)
    if GIVE:
        tl.store(peer_ptr + e, v, mask=mask)
    z = tl.zeros(e.shape, dtype=tl.uint64)
    if HASH:
        z = tl.where(mask, _term(v, e, k1, k2, WORD), 0)
    return tl.sum(z, axis=0)


@triton.jit(do_not_specialize=["seed", "k1", "k2"])
def _draw_kernel(own_ptr, peer_ptr, partial_ptr, n, seed, scale, shift, high, k1, k2,
                 NORMAL: tl.constexpr, GIVE: tl.constexpr, HASH: tl.constexpr,
                 WORD: tl.constexpr, QUARTER: tl.constexpr):
    pid = tl.program_id(0)
    q = tl.arange(0, QUARTER)
    counter = pid.to(tl.int64) * QUARTER + q
    if NORMAL:
        r0, r1, r2, r3 = tl.randn4x(seed, counter)
    else:
        r0, r1, r2, r3 = tl.rand4x(seed, counter)
    base = pid.to(tl.int64) * (4 * QUARTER) + q
    bounded = not NORMAL
    total = _put(own_ptr, peer_ptr, base, base < n, r0 * scale + shift, shift, high, k1, k2,
                 bounded, GIVE, HASH, WORD)
    e = base + QUARTER
    total += _put(own_ptr, peer_ptr, e, e < n, r1 * scale + shift, shift, high, k1, k2,
                  bounded, GIVE, HASH, WORD)
    e = base + 2 * QUARTER
    total += _put(own_ptr, peer_ptr, e, e < n, r2 * scale + shift, shift, high, k1, k2,
                  bounded, GIVE, HASH, WORD)
    e = base + 3 * QUARTER
    total += _put(own_ptr, peer_ptr, e, e < n, r3 * scale + shift, shift, high, k1, k2,
                  bounded, GIVE, HASH, WORD)
    if HASH:
        tl.store(partial_ptr + pid, total.to(tl.int64, bitcast=True))


def serves(dtype, kind, low, high):
    """Whether draw serves an input of torch `dtype` with law `kind` (Distribution.kind) on
    [low, high) for a uniform one."""
    return dtype in WORDS and kind in KINDS and (kind == 0 or high > low)


def draw(own, seed, kind, mean, stddev, low, high, peer=None, key=None):
    """Draws every element of the contiguous 1-D tensor `own` (and the same values into `peer`,
    where given) from Philox under `seed`: normal(mean, stddev) for kind 0, else uniform on
    [low, high). With `key` (fast_compare.new_key's), returns keyed_hash of the values as words
    of their size (a 0-d int64 tensor, not waited for), else None. The values of element i depend
    on the seed and i alone."""
    if own.dim() != 1 or not own.is_contiguous() or own.dtype not in WORDS or (
            peer is not None and (peer.shape != own.shape or peer.dtype != own.dtype
                                  or not peer.is_contiguous())):
        raise ValueError("a contiguous 1-D float32, float16 or bfloat16 tensor (and its copy)")
    n = own.numel()
    if n == 0:
        return None if key is None else torch.zeros((), dtype=torch.int64, device=own.device)
    blocks = triton.cdiv(n, BLOCK)
    partial = torch.empty(blocks if key is not None else 1, dtype=torch.int64, device=own.device)
    if kind == 0:
        scale, shift = float(stddev), float(mean)
    else:
        scale, shift = float(high - low), float(low)
    k1, k2 = key if key is not None else (1 << 62, 1 << 62 | 1)
    word = tl.int32 if WORDS[own.dtype] == torch.int32 else tl.int16
    _draw_kernel[(blocks,)](own, own if peer is None else peer, partial, n,
                            seed & ((1 << 63) - 1), scale, shift, float(high), k1, k2,
                            NORMAL=kind == 0,
                            GIVE=peer is not None, HASH=key is not None, WORD=word,
                            QUARTER=QUARTER)
    return None if key is None else partial.sum()


def draw_works(dtype, device):
    """Whether draw, as compiled for `device`, makes for `dtype` values of its law (uniform ones
    within [low, high), normal ones of about their mean and spread), the same ones into both
    tensors and again for the same seed without them, others for another seed, and
    keyed_hash's value of them; over several blocks and a partial last one. Checked once per
    process, device and dtype before a draw relies on it."""
    n = 3 * BLOCK + 17
    key = new_key(0x0FED_CBA9_8765_4321_0123_4567_89AB_CDEF)
    words = WORDS[dtype]
    own, peer = (torch.empty(n, dtype=dtype, device=device) for _ in range(2))
    h = draw(own, 7, 1, 0.0, 1.0, 0.25, 0.75, peer=peer, key=key)
    if int(h) != int(keyed_hash(own.view(words), key)) or not torch.equal(own, peer):
        return False
    u = own.float()
    if not bool(((u >= 0.25) & (u < 0.75)).all()) or float(u.std()) < 0.1:
        return False
    again = torch.empty_like(own)
    draw(again, 7, 1, 0.0, 1.0, 0.25, 0.75)
    other = torch.empty_like(own)
    draw(other, 8, 1, 0.0, 1.0, 0.25, 0.75)
    if not torch.equal(again, own) or torch.equal(other, own):
        return False
    h = draw(own, 9, 0, 2.0, 3.0, 0.0, 0.0, peer=peer, key=key)
    draw(again, 9, 0, 2.0, 3.0, 0.0, 0.0)
    if int(h) != int(keyed_hash(own.view(words), key)) or not torch.equal(own, peer) or \
            not torch.equal(again, own):
        return False
    x = own.float()
    return bool(x.isfinite().all()) and abs(float(x.mean()) - 2.0) < 0.2 and \
        abs(float(x.std()) - 3.0) < 0.3
