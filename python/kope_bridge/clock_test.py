"""Tests of kope's own timing calls (clock.py), with a stand-in for PyTorch's CUDA types so
that they run on the CPU. Run by ctest: python3 -m unittest kope_bridge.clock_test."""
import time
import types
import unittest
from unittest import mock

from . import clock


def fake_torch(times):
    """A torch whose events take their times (ms) from `times`, in the order recorded."""
    class Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self, stream):
            self.at = times.pop(0)

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.at - self.at

    synced = []
    torch = types.SimpleNamespace(
        _C=types.SimpleNamespace(_CudaEventBase=Event,
                                 _cuda_synchronize=lambda: synced.append(True)),
        cuda=types.SimpleNamespace(default_stream=lambda device: "stream"))
    return torch, synced


class DeviceClockTest(unittest.TestCase):
    def timed(self, start, after, end):
        torch, synced = fake_torch([start, after, end])
        timer = clock.DeviceClock(torch, "cuda:0")
        timer.begin()
        timer.finish()
        return timer.elapsed(), len(synced)

    def test_a_call_done_on_the_harnesss_stream_hides_nothing(self):
        (ns, hidden), synced = self.timed(0.0, 1.0, 1.02)
        self.assertEqual((ns, hidden, synced), (1_020_000, 0, 2))

    def test_work_left_on_another_stream_is_charged_and_told(self):
        (ns, hidden), _ = self.timed(0.0, 0.05, 2.05)
        self.assertEqual(ns, 2_050_000)
        self.assertEqual(hidden, 2_000_000)

    def test_patching_torch_after_binding_changes_nothing(self):
        torch, synced = fake_torch([0.0, 1.0, 1.0])
        timer = clock.DeviceClock(torch, "cuda:0")
        torch._C._CudaEventBase.elapsed_time = lambda self, end: 0.001  # a candidate's patch
        torch._C._cuda_synchronize = lambda: None
        timer.begin()
        timer.finish()
        self.assertEqual(timer.elapsed(), (1_000_000, 0))
        self.assertEqual(len(synced), 2)


class HostClockTest(unittest.TestCase):
    def test_a_patched_perf_counter_does_not_reach_kopes_clock(self):
        with mock.patch.object(time, "perf_counter_ns", lambda: 0):
            a = clock.now_ns()
            time.sleep(0.002)
            b = clock.now_ns()
        self.assertGreaterEqual(b - a, 2_000_000)


class TallyTest(unittest.TestCase):
    def test_calls_with_work_on_other_streams_are_noted_for_the_parent(self):
        from .kernels import Tally
        tally = Tally()
        self.assertEqual(tally.side_stream_note(), "")
        tally.ns = [1, 2, 3]
        tally.side_stream_calls, tally.side_stream_ns = 2, 4_000_000
        self.assertEqual(tally.side_stream_note(),
                         '{"side_stream_calls": 2, "calls": 3, "side_stream_ns": 4000000}')


if __name__ == "__main__":
    unittest.main()
