"""kope's own timing calls, bound before any problem or candidate code is imported.

A ModelNew runs in the bridge's process, so it can replace what Python code looks up by name:
`time.perf_counter_ns`, `torch.cuda.Event`, `torch.cuda.synchronize`. The timed loops
(kernels.py) therefore never look those up: this module takes the clock, the device-wide
synchronize and the CUDA event methods once, when the bridge starts (`bind`, from the serve loop
before its first LOAD; importing this module already takes the host clock), as references that
no later change to `time` or `torch` reaches. The event methods are those of PyTorch's C type
(`torch._C._CudaEventBase`), whose attributes cannot be set.

This raises the bar, it is no wall: code in the same process can still find and change kope's
own objects. The parent's outside clock bounds every claim (src/eval/timing_session.cc): a
candidate whose reported times leave more of its batches' wall time unexplained than the
baseline's is rejected.
"""
import time

# The host clock, as it was when the bridge started.
_now_ns = time.perf_counter_ns

# A call's work left pending on other streams: the device-wide synchronize after it took this
# much longer than the harness's stream (and this fraction of the call's time) to finish.
SIDE_STREAM_MIN_MS = 0.1
SIDE_STREAM_FRACTION = 0.25


def now_ns():
    return _now_ns()


class DeviceClock:
    """CUDA events on the device's default stream, with a device-wide synchronize before the
    start and before the end event (work on any stream ends inside a timed call), and a third
    event on the default stream right after the call: where the synchronize waits notably
    longer than that event, the call left work on streams the harness never waits on."""

    def __init__(self, torch, device):
        base = torch._C._CudaEventBase
        self._record, self._wait, self._elapsed = base.record, base.synchronize, base.elapsed_time
        self._synchronize = torch._C._cuda_synchronize
        self._stream = torch.cuda.default_stream(device)
        self._start, self._after, self._end = (base(enable_timing=True) for _ in range(3))

    def synchronize(self):
        self._synchronize()

    def begin(self):
        self._synchronize()
        self._record(self._start, self._stream)

    def finish(self):
        """Right after the call returned: marks the harness's stream, then waits for all."""
        self._record(self._after, self._stream)
        self._synchronize()
        self._record(self._end, self._stream)

    def elapsed(self):
        """(ns of the call, ns of it that was work on other streams after the harness's stream
        was done: 0 unless notable)."""
        self._wait(self._end)
        total = self._elapsed(self._start, self._end)
        hidden = total - self._elapsed(self._start, self._after)
        if hidden < max(SIDE_STREAM_MIN_MS, SIDE_STREAM_FRACTION * total):
            hidden = 0.0
        return round(total * 1e6), round(hidden * 1e6)


_device_clocks = {}
_synchronize = None  # the bound device-wide synchronize (a GPU runner's)


def bind(torch, device):
    """Takes the device's timing calls now (a GPU runner: before any LOAD)."""
    global _synchronize
    if device != "cpu" and device not in _device_clocks:
        _device_clocks[device] = DeviceClock(torch, device)
        _synchronize = _device_clocks[device].synchronize


def synchronize():
    """Waits for all work on the GPU, by the synchronize `bind` took (the bridge's own copies
    and checks: a candidate that replaces torch.cuda.synchronize does not change them)."""
    _synchronize()


def device_clock(torch, device):
    """The clock `bind` took for `device` (taken now where it was not: a test's kernel)."""
    bind(torch, device)
    return _device_clocks[device]
