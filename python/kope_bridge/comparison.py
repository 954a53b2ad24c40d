"""How the reference runner compares a candidate's tensors with its own (checker.py's CHECK):
src/eval/compare.cc's rules in float64, and the fast test that decides, in one pass over both
tensors, that an output passes them: fast_compare's Triton kernel on a GPU once it gave the
eager test's counts for the dtype, else torch.compile's fusion of the eager test, else eager
code. Also the byte comparisons and checksums of inputs."""
import torch

# Elements compared at once (float64 temporaries of 256 MiB each).
COMPARE_CHUNK = 1 << 25
# Outputs from this many elements on a GPU go through the fused fast test first: fast_compare's
# Triton kernel on TRITON_DEVICES, else torch.compile's in windows of FUSED_MIN_ELEMENTS * 2^k
# elements, at most FUSED_MAX_WINDOW (a few static shapes: see Comparer.failing_fast_test).
TRITON_DEVICES = ("cuda",)
FUSED_MIN_ELEMENTS = 1 << 22
FUSED_MAX_WINDOW = 1 << 26
INT_OF_SIZE = {1: ("uint8", "B"), 2: ("int16", "h"), 4: ("int32", "i"), 8: ("int64", "q")}


def to_hex(x):
    return float(x).hex()


def fast_test(e, a, rtol, atol):
    e, a = e.to(torch.float64), a.to(torch.float64)
    ok = ((a - e).abs() <= atol + rtol * e.abs()) & e.isfinite()
    return (~ok).sum()


def eager_failing(e, a, rtol, atol):
    """fast_test's count, run eagerly: what a compiled test must give."""
    bounds = torch.tensor([rtol, atol], dtype=torch.float64, device=e.device)
    return int(fast_test(e, a, bounds[0], bounds[1]))


def as_words(a, b):
    """Two byte ranges of one length as the widest integer words their offsets and length allow
    (on a GPU torch.equal of bytes runs at 40% of the bandwidth, of 8-byte words at 86%)."""
    for size in (8, 4, 2):
        if a.numel() % size == 0 and a.storage_offset() % size == 0 and \
                b.storage_offset() % size == 0:
            words = getattr(torch, INT_OF_SIZE[size][0])
            return a.view(words), b.view(words)
    return a, b


def same_bytes(a, b):
    return torch.equal(*as_words(a, b))


def all_within(expected, actual, rtol, atol):
    """Whether every expected value is finite and every actual one within atol + rtol *
    |expected| of it, in float64, chunk by chunk: compare()'s fast test, without the errors.
    fast_test's expression, in place and stopping at the first failing chunk: through
    fast_test (a count, new tensors) it took 185-209 ms for 8M float32 elements, 144 ms so."""
    for start in range(0, expected.numel(), COMPARE_CHUNK):
        e = expected[start:start + COMPARE_CHUNK].to(torch.float64)
        a = actual[start:start + COMPARE_CHUNK].to(torch.float64)
        if not bool(((a - e).abs_() <= e.abs().mul_(rtol).add_(atol)).logical_and_(
                e.isfinite()).all()):
            return False
    return True


def passing():
    """compare()'s summary of an output that passed (its errors are reported only for a
    failing output)."""
    return {"mismatches": 0, "first": -1, "expected": "0x0p+0", "actual": "0x0p+0",
            "max_abs": "0x0p+0", "max_rel": "0x0p+0", "nan_inf": False}


def weighted_sum(raw):
    """sum((2i + 1) * word_i) over the bytes as 64-bit words (the tail as bytes), mod 2^64:
    a permutation of the words changes it."""
    if raw.storage_offset() % 8:
        raw = raw.clone()  # 64-bit words need an aligned start
    whole = raw.numel() - raw.numel() % 8
    total = int(raw[whole:].to(torch.int64).sum())
    return (total + weighted_words(raw[:whole].view(torch.int64))) & ((1 << 64) - 1)


def weighted_words(words):
    """sum((2i + 1) * w_i) over a 1-D integer tensor's elements, each widened to 64 bits as
    its type does, mod 2^64: fast_compare.checksum's formula, eagerly and in chunks."""
    total = 0
    for start in range(0, words.numel(), COMPARE_CHUNK):
        chunk = words[start:start + COMPARE_CHUNK].to(torch.int64)
        weights = torch.arange(2 * start + 1, 2 * (start + chunk.numel()), 2,
                               dtype=torch.int64, device=words.device)
        total += int((chunk * weights).sum())
    return total & ((1 << 64) - 1)


class Comparer:
    """compare() and its fast tests, with what they learned in this process: whether Triton
    serves (and for which dtypes), torch.compile's fused test, tolerances on the device."""

    def __init__(self):
        self.fast = None  # torch.compile's fused fast test of compare()
        self.triton = None  # fast_compare once imported, False once it failed
        self.triton_ok = {}  # dtype -> whether fast_compare agreed with the eager test
        # (device, word dtype) -> whether fast_compare.keyed_hash passed its check there
        self.keyed_ok = {}
        self._bounds = {}

    def failing_fast_test(self, expected, actual, rtol, atol):
        """Elements that fail the fast test (finite expected, |actual - expected| within the
        bound), in one pass over both tensors: fast_compare's Triton kernel where it passed its
        check for the dtype, else torch.compile's fusion of fast_test into a single reduction.
        The latter is compiled for static shapes: a kernel made for symbolic sizes is tuned for
        the first, small, size and reduces a large tensor on a few blocks. The tensor is cut into
        windows of a few fixed sizes (the largest power-of-two multiple of FUSED_MIN_ELEMENTS
        that fits, at most FUSED_MAX_WINDOW), so that the same few kernels serve every problem
        and come from the task runners' persistent compile cache after their first compile on a
        machine; the tail under FUSED_MIN_ELEMENTS is tested eagerly. The counts stay on the
        device until the end (one synchronization). -1 when compiling failed: eager chunks
        from then on."""
        failing = self.triton_count(expected, actual, rtol, atol)
        if failing is not None:
            return failing
        if self.fast is None:
            self.fast = torch.compile(fast_test, dynamic=False)
        bounds = torch.tensor([rtol, atol], dtype=torch.float64, device=expected.device)
        n, start = expected.numel(), 0
        try:
            total = torch.zeros((), dtype=torch.int64, device=expected.device)
            while n - start >= FUSED_MIN_ELEMENTS:
                window = FUSED_MIN_ELEMENTS
                while window * 2 <= min(n - start, FUSED_MAX_WINDOW):
                    window *= 2
                total += self.fast(expected[start:start + window], actual[start:start + window],
                                   bounds[0], bounds[1])
                start += window
            if start < n:
                total += fast_test(expected[start:], actual[start:], bounds[0], bounds[1])
            return int(total)
        except Exception:  # noqa: BLE001 (no compiler, a failing compile)
            self.fast = fast_test
            return -1

    def triton_count(self, expected, actual, rtol, atol):
        """fast_compare's count, or None where triton_usable says no."""
        try:
            if not self.triton_usable(expected.dtype, expected.device):
                return None
            return self.triton.count_failing(expected, actual, rtol, atol)
        except Exception:  # noqa: BLE001 (a failing launch)
            self.triton = False
            return None

    def triton_usable(self, dtype, device):
        """Whether fast_compare's test serves this dtype: not where Triton is missing or failed
        (never tried again), nor where its answers on fast_compare.crafted_pair differed from
        the eager fast_test's (checked once per dtype and process)."""
        if self.triton_module(device) is None:
            return False
        try:
            if dtype not in self.triton_ok:
                e, a = self.triton.crafted_pair(dtype, device)
                self.triton_ok[dtype] = all(
                    self.triton.count_failing(e, a, r, t) == eager_failing(e, a, r, t)
                    for r, t in ((1e-3, 1e-5), (0.0, 0.0), (0.5, 0.5)))
            return self.triton_ok[dtype]
        except Exception:  # noqa: BLE001 (no compiler, a failing launch)
            self.triton = False
            return False

    def keyed_usable(self, dtype, device):
        """Whether fast_compare.keyed_hash serves words of `dtype` on `device`: Triton there,
        and the kernel passed keyed_hash_works (once per process, device and word type)."""
        if self.triton_module(device) is None:
            return False
        if (device, dtype) not in self.keyed_ok:
            try:
                self.keyed_ok[device, dtype] = self.triton.keyed_hash_works(dtype, device)
            except Exception:  # noqa: BLE001 (no compiler, a failing launch)
                self.keyed_ok[device, dtype] = False
        return self.keyed_ok[device, dtype]

    def triton_module(self, device):
        """fast_compare for tensors on `device`, imported once; None where Triton does not serve
        that device or is missing or failed."""
        if self.triton is False or device.type not in TRITON_DEVICES:
            return None
        if self.triton is None:
            try:
                from . import fast_compare
            except Exception:  # noqa: BLE001 (no Triton)
                self.triton = False
                return None
            self.triton = fast_compare
        return self.triton

    def bounds(self, tolerance, device):
        """[rtol, atol] in float64 on the device, made once per tolerance."""
        key = (tolerance, device)
        if key not in self._bounds:
            self._bounds[key] = torch.tensor(list(tolerance), dtype=torch.float64, device=device)
        return self._bounds[key]

    def checksum(self, raw):
        """A position-weighted sum of a byte range (fast_compare.checksum in one pass where
        Triton serves, else weighted_sum)."""
        if self.triton_module(raw.device) is not None:
            try:
                return self.triton.checksum(as_words(raw, raw)[0])
            except Exception:  # noqa: BLE001 (a failing launch)
                self.triton = False
        return weighted_sum(raw)

    def checksum_and_constant(self, words):
        """The checksum of a contiguous 1-D integer tensor's elements, and whether there are
        several, all equal: fast_compare's one pass where Triton serves, else the same sum
        eagerly (weighted_words) and an eager test."""
        if self.triton_module(words.device) is not None:
            try:
                return self.triton.checksum_and_constant(words)
            except Exception:  # noqa: BLE001 (a failing launch)
                self.triton = False
        constant = words.numel() > 1 and bool((words == words[0]).all())
        return weighted_words(words), constant

    def compare(self, expected, actual, rtol, atol):
        """src/eval/compare.cc's CompareOutputs: NaN matches NaN, an infinity itself, a finite
        value within atol + rtol * |expected|, in float64. A chunk that passes the fast test
        (finite expected, |actual - expected| within the bound) is done; any other goes through
        the exact rules, which also give the errors."""
        out = passing()
        if expected.device.type == "cuda" and expected.numel() >= FUSED_MIN_ELEMENTS and \
                self.fast is not fast_test and \
                self.failing_fast_test(expected, actual, rtol, atol) == 0:
            return out  # passes (its errors are reported only for a failing output)
        if expected.device.type != "cuda" and all_within(expected, actual, rtol, atol):
            return out  # the same, eagerly: a third fewer passes than with the errors
        max_abs, max_rel, failed = 0.0, 0.0, False
        for start in range(0, expected.numel(), COMPARE_CHUNK):
            e = expected[start:start + COMPARE_CHUNK].to(torch.float64)
            a = actual[start:start + COMPARE_CHUNK].to(torch.float64)
            err = (a - e).abs_()
            bound = e.abs().mul_(rtol).add_(atol)
            if bool(((err <= bound) & e.isfinite()).all()):
                max_abs = max(max_abs, float(err.max()))
                rel = torch.where(e != 0, err / e.abs(), 0.0)
                max_rel = max(max_rel, float(rel.max()))
                continue
            e_nan, a_nan = e.isnan(), a.isnan()
            any_nan = e_nan | a_nan
            inf = ~any_nan & (e.isinf() | a.isinf())
            finite = ~(any_nan | inf)
            err = torch.where(finite, err, 0.0)
            max_abs = max(max_abs, float(err.max()))
            rel = torch.where(finite & (e != 0), err / e.abs(), 0.0)
            max_rel = max(max_rel, float(rel.max()))
            ok = torch.where(any_nan, e_nan & a_nan, torch.where(inf, e == a, err <= bound))
            bad = ~ok
            n = int(bad.sum())
            if n == 0:
                continue
            if not failed:
                k = int(bad.to(torch.uint8).argmax())
                out.update(first=start + k, expected=to_hex(e[k]), actual=to_hex(a[k]),
                           nan_inf=bool(any_nan[k] | inf[k]))
                failed = True
            out["mismatches"] += n
        out["max_abs"], out["max_rel"] = to_hex(max_abs), to_hex(max_rel)
        return out
