"""The reference runner's fast test of a candidate's output on a GPU (comparison.py): how many
elements fail |actual - expected| <= atol + rtol * |expected| with a finite expected, computed
in float64, in one pass over both tensors.

A Triton kernel: it compiles in well under a second and Triton keeps it in its cache, where
torch.compile spends seconds in every process on its own machinery even when its cache holds the
kernel (the reference's first evaluation of a problem paid that). The checker compares its
answer with the eager rule on crafted tensors before it uses it for a dtype, and falls back to
torch.compile, then to eager code, on any failure. The test only decides that an output passes;
every output that fails it goes through compare.cc's exact rules.
"""
import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _failing_kernel(e_ptr, a_ptr, bounds_ptr, partial_ptr, n, VIA_F32: tl.constexpr,
                    BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    e = tl.load(e_ptr + offs, mask=mask, other=0)
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    if VIA_F32:  # half types widen exactly through float32
        e = e.to(tl.float32)
        a = a.to(tl.float32)
    e = e.to(tl.float64)
    a = a.to(tl.float64)
    rtol = tl.load(bounds_ptr)
    atol = tl.load(bounds_ptr + 1)
    # NaN fails both comparisons, an infinite expected fails the second: the exact rules decide.
    ok = (tl.abs(a - e) <= atol + rtol * tl.abs(e)) & (tl.abs(e) < float("inf"))
    bad = mask & (ok == 0)
    tl.store(partial_ptr + pid, tl.sum(bad.to(tl.int32), axis=0))


def count_failing(expected, actual, rtol, atol):
    """The number of failing elements of two contiguous 1-D tensors of one dtype."""
    bounds = torch.tensor([rtol, atol], dtype=torch.float64, device=expected.device)
    return int(failing(expected, actual, bounds))


def failing(expected, actual, bounds):
    """count_failing's count as a tensor on the tensors' device, not waited for; `bounds` is
    [rtol, atol] in float64 on that device."""
    if expected.shape != actual.shape or expected.dtype != actual.dtype or expected.dim() != 1 \
            or not expected.is_contiguous() or not actual.is_contiguous():
        raise ValueError("two contiguous 1-D tensors of one shape and dtype")
    n = expected.numel()
    if n == 0:
        return torch.zeros((), dtype=torch.int64, device=expected.device)
    blocks = triton.cdiv(n, BLOCK)
    partial = torch.empty(blocks, dtype=torch.int32, device=expected.device)
    via_f32 = expected.dtype in (torch.float16, torch.bfloat16)
    _failing_kernel[(blocks,)](expected, actual, bounds, partial, n, VIA_F32=via_f32, BLOCK=BLOCK)
    return partial.sum(dtype=torch.int64)


@triton.jit
def _checksum_kernel(w_ptr, partial_ptr, differs_ptr, n, CONSTANT: tl.constexpr,
                     BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(w_ptr + offs, mask=mask, other=0).to(tl.int64)
    tl.store(partial_ptr + pid, tl.sum(w * (2 * offs + 1), axis=0))
    if CONSTANT:  # whether any element of the block differs from the first one
        first = tl.load(w_ptr).to(tl.int64)
        tl.store(differs_ptr + pid, tl.max((mask & (w != first)).to(tl.int32), axis=0))


def _checksum_launch(words, constant):
    """The kernel's per-block sums and flags; None for an empty tensor."""
    if words.dim() != 1 or words.dtype.is_floating_point or not words.is_contiguous():
        raise ValueError("a contiguous 1-D integer tensor")
    if words.numel() == 0:
        return None
    blocks = triton.cdiv(words.numel(), BLOCK)
    partial = torch.empty(blocks, dtype=torch.int64, device=words.device)
    differs = torch.empty(blocks if constant else 1, dtype=torch.int32, device=words.device)
    _checksum_kernel[(blocks,)](words, partial, differs, words.numel(), CONSTANT=constant,
                                BLOCK=BLOCK)
    return partial, differs


def checksum(words):
    """sum((2i + 1) * w_i) over a contiguous 1-D integer tensor, wrapping at 64 bits, in one
    pass: it changes when an element does, and when two are swapped. For telling whether the
    trusted reference wrote its own inputs, not for anything a candidate could aim at."""
    launched = _checksum_launch(words, False)
    return 0 if launched is None else int(launched[0].sum()) & ((1 << 64) - 1)


def checksum_and_constant(words):
    """checksum(words), and whether the tensor has several elements, all equal, from the same
    one pass (the fingerprint of the reference's outputs); one synchronization."""
    launched = _checksum_launch(words, True)
    if launched is None:
        return 0, False
    partial, differs = launched
    total, differing = torch.stack([partial.sum(), differs.max().to(torch.int64)]).tolist()
    return total & ((1 << 64) - 1), words.numel() > 1 and differing == 0


@triton.jit
def _differ_kernel(a_ptr, b_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=0)
    tl.store(partial_ptr + pid, tl.max((a != b).to(tl.int32), axis=0))


def differ(a, b):
    """Whether two contiguous 1-D integer tensors of one shape and dtype differ anywhere, in
    one read of each (`(a != b).any()` writes and reads a mask besides): a bool tensor on their
    device, not waited for."""
    if a.shape != b.shape or a.dtype != b.dtype or a.dim() != 1 or a.dtype.is_floating_point \
            or not a.is_contiguous() or not b.is_contiguous():
        raise ValueError("two contiguous 1-D integer tensors of one shape and dtype")
    if a.numel() == 0:
        return torch.zeros((), dtype=torch.bool, device=a.device)
    blocks = triton.cdiv(a.numel(), BLOCK)
    partial = torch.empty(blocks, dtype=torch.int32, device=a.device)
    _differ_kernel[(blocks,)](a, b, partial, a.numel(), BLOCK=BLOCK)
    return partial.max() != 0


@triton.jit
def _mix(x):
    """murmur3's 64-bit finalizer: a bijection of the word that spreads each bit over all."""
    x ^= x >> 33
    x *= 0xFF51AFD7ED558CCD
    x ^= x >> 33
    x *= 0xC4CEB9FE1A85EC53
    x ^= x >> 33
    return x


@triton.jit
def keyed_term(x, index, k1, k2):
    """A word's term of keyed_hash: `x` its bits widened to 64 (unsigned), `index` its place
    (mix_term in Python). fast_draw's kernel adds the same terms as it writes its values."""
    at = k1.to(tl.uint64, bitcast=True) + \
        index.to(tl.uint64, bitcast=True) * k2.to(tl.uint64, bitcast=True)
    return _mix(x ^ at)


@triton.jit(do_not_specialize=["k1", "k2"])  # one kernel for every key
def _keyed_kernel(src_ptr, dst_ptr, partial_ptr, n, k1, k2, COPY: tl.constexpr,
                  BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(src_ptr + offs, mask=mask, other=0)
    if COPY:
        tl.store(dst_ptr + offs, w, mask=mask)
    z = tl.where(mask, keyed_term(w.to(tl.int64).to(tl.uint64, bitcast=True), offs, k1, k2), 0)
    tl.store(partial_ptr + pid, tl.sum(z, axis=0).to(tl.int64, bitcast=True))


def new_key(bits):
    """A key for keyed_hash from 124 random bits (62 for each number): two numbers of 63 bits,
    the top one set so that the kernel always takes them as 64-bit integers, the second odd."""
    k1, k2 = bits & ((1 << 62) - 1), (bits >> 62) & ((1 << 62) - 1)
    return k1 | 1 << 62, k2 | 1 << 62 | 1


def keyed_hash(words, key, copy_to=None, start=0):
    """sum(mix(w_i ^ (k1 + i * k2))) over a contiguous 1-D integer tensor (each word widened to
    64 bits as its type does: signed types by sign, uint8 by zeros), wrapping at 64 bits, in one
    read (and, with `copy_to`, one write of the words there): a 0-d int64 tensor on the
    tensor's device, not waited for. With `start`, the words are those from index `start` of a
    longer tensor, and i counts from there (their terms of that tensor's hash). `key` is
    new_key's. Unlike checksum, which a candidate that knows it can balance, a change of one
    word never keeps the hash (mix is a bijection), and without the key a change of several
    keeps it only by chance (docs/EVALUATION.md: about 2^-64 for most, about 2^-(63-m) for a
    swap of two words 2^m apart).
    For telling whether a candidate changed its copy of the inputs without reading the
    reference's inputs again, and whether the reference wrote its own."""
    if words.dim() != 1 or words.dtype.is_floating_point or not words.is_contiguous() or (
            copy_to is not None and (copy_to.shape != words.shape or copy_to.dtype != words.dtype
                                     or not copy_to.is_contiguous())):
        raise ValueError("a contiguous 1-D integer tensor (and a copy of its shape and dtype)")
    if words.numel() == 0:
        return torch.zeros((), dtype=torch.int64, device=words.device)
    k1 = key[0]
    if start:  # k1 + (start + i) k2 = (k1 + start k2) + i k2
        k1 = as_int64(k1 + start * key[1])
        if -(1 << 31) <= k1 < 1 << 31:  # the kernel takes its keys as 64-bit integers only
            raise ValueError("no 64-bit key for this start")
    blocks = triton.cdiv(words.numel(), BLOCK)
    partial = torch.empty(blocks, dtype=torch.int64, device=words.device)
    _keyed_kernel[(blocks,)](words, words if copy_to is None else copy_to, partial, words.numel(),
                             k1, key[1], COPY=copy_to is not None, BLOCK=BLOCK)
    return partial.sum()


_M64 = (1 << 64) - 1


def mix_term(word, index, key):
    """One word's term of keyed_hash, in Python: `word` as the tensor holds it (a signed or
    unsigned integer), `index` its place. For checking the kernel, and for updating a hash when
    one word changes (the sum wraps: add the new term, subtract the old)."""
    x = (word & _M64) ^ ((key[0] + index * key[1]) & _M64)
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _M64
    return x ^ (x >> 33)


def as_int64(value):
    """A 64-bit pattern as the signed number an int64 tensor holds."""
    value &= _M64
    return value - (1 << 64) if value >> 63 else value


WORD_RANGES = {t: (torch.iinfo(t).min, torch.iinfo(t).max)  # inclusive
               for t in (torch.uint8, torch.int16, torch.int32, torch.int64)}


def keyed_hash_works(dtype, device):
    """Whether keyed_hash, as compiled for `device`, computes for words of `dtype` what
    mix_term says, on crafted words (negative ones and the extremes included, over several
    blocks and a partial last one), also when it copies them (and copies them exactly) and
    over the words from an index on. Checked
    once per process, device and word type before CHECK relies on it."""
    g = torch.Generator(device="cpu")
    g.manual_seed(20261130)
    key = new_key(0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210)
    low, high = WORD_RANGES[dtype]
    w = torch.randint(low, high, (3 * BLOCK + 17,), generator=g, dtype=torch.int64).to(dtype)
    w[:4] = torch.tensor([low, high, 0, -1 if low < 0 else 1], dtype=torch.int64).to(dtype)
    terms = [mix_term(x, i, key) for i, x in enumerate(w.tolist())]
    start = BLOCK + 3  # the terms from there on: a perturbation's update (checker._rehash)
    w = w.to(device)
    copy = torch.empty_like(w)
    return int(keyed_hash(w, key)) == as_int64(sum(terms)) and \
        int(keyed_hash(w, key, copy_to=copy)) == as_int64(sum(terms)) and \
        torch.equal(copy, w) and \
        int(keyed_hash(w[start:], key, start=start)) == as_int64(sum(terms[start:]))


def crafted_pair(dtype, device, n=3 * BLOCK + 17):
    """Expected and actual values that exercise every rule of the test: equal values, values
    within and beyond the bound, NaN on either side and both, infinities of both signs, zeros;
    over several blocks and a partial last one. For checking a compiled test against the eager
    one."""
    g = torch.Generator(device="cpu")
    g.manual_seed(20261130)
    e = torch.randn(n, generator=g, dtype=torch.float64)
    a = e + torch.randn(n, generator=g, dtype=torch.float64) * 1e-3
    nan, inf = float("nan"), float("inf")
    if dtype.is_floating_point:
        e[5], a[7], e[9], a[9] = nan, nan, nan, nan
        e[11], a[11], e[13], a[13], a[15] = inf, inf, -inf, inf, -inf
    e[17], a[17] = 0.0, 0.0
    a[19] = e[19] + 10.0
    a[n - 1] = e[n - 1] - 5.0  # in the partial last block
    if not dtype.is_floating_point:
        e, a = (e * 1000).round(), (a * 1000).round()
    return e.to(dtype).to(device), a.to(dtype).to(device)
