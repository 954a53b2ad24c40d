"""Phase boundaries: `phase("prefill")` / `phase("decode")` blocks, and the recorder that times
them while a request entry is profiled.

A Recorder is made current for one run (`recording(recorder)`); every phase block then records its
host clock (perf_counter), a CUDA event on CUDA devices, and a profiler range named
`kope_phase::<name>` that attributes the operations inside it. Without a current recorder a phase
block does nothing. Not thread-safe: one run at a time, on the calling thread.
"""
import contextlib
import time

import torch

PHASES = ("prefill", "decode")
RANGE_PREFIX = "kope_phase::"

_current = None


class Recorder:
    """Collects phase blocks of one run: per phase, the number of steps and their total time."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        self.spans = []  # (phase, steps, start event or clock, end event or clock)
        self._open = None

    def begin(self, name, steps=1):
        if name not in PHASES:
            raise ValueError(f"phase: unknown phase {name!r} (prefill, decode)")
        if self._open is not None:
            raise RuntimeError(f"phase {name!r} begun inside phase {self._open[0]!r}")
        scope = torch.profiler.record_function(RANGE_PREFIX + name)
        scope.__enter__()
        self._open = (name, steps, self._mark(), scope)

    def end(self):
        name, steps, start, scope = self._open
        self._open = None
        stop = self._mark()
        scope.__exit__(None, None, None)
        self.spans.append((name, steps, start, stop))

    def _mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def totals(self):
        """{phase: (steps, milliseconds)} over the run's blocks (synchronizes CUDA)."""
        if self.cuda:
            torch.cuda.synchronize()
        out = {}
        for name, steps, start, stop in self.spans:
            ms = start.elapsed_time(stop) if self.cuda else (stop - start) * 1e3
            n, total = out.get(name, (0, 0.0))
            out[name] = (n + steps, total + ms)
        return out


def current_phase():
    """The phase a block is in now, or None."""
    if _current is None or _current._open is None:
        return None
    return _current._open[0]


@contextlib.contextmanager
def recording(recorder):
    """Makes `recorder` the one phase blocks record into, for the duration of the block."""
    global _current
    previous, _current = _current, recorder
    try:
        yield recorder
    finally:
        _current = previous


@contextlib.contextmanager
def phase(name, steps=1):
    """Marks the code inside as (`steps` steps of) phase `name`: "prefill" or "decode"."""
    recorder = _current
    if recorder is None:
        yield
        return
    recorder.begin(name, steps)
    try:
        yield
    finally:
        recorder.end()
