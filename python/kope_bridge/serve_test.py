"""Tests of the bridge's server helpers that need no runner. Run by ctest:
python3 -m unittest kope_bridge.serve_test."""
import os
import subprocess
import sys
import unittest
import weakref
from unittest import mock

import torch

from . import kernels
from . import serve


class DescribeErrorTest(unittest.TestCase):
    def test_an_out_of_memory_error_says_what_the_device_had_free(self):
        with mock.patch.object(torch.cuda, "mem_get_info", return_value=(3 << 30, 140 << 30)), \
                mock.patch.object(torch.cuda, "memory_reserved", return_value=16 << 30):
            try:
                raise torch.OutOfMemoryError("CUDA out of memory")
            except torch.OutOfMemoryError as e:
                text = serve.describe_error(e)
        self.assertIn("OutOfMemoryError: CUDA out of memory", text)
        self.assertIn("3.0 GiB free of 140.0; this process holds 16.0 GiB", text)

    def test_other_errors_and_a_device_that_cannot_answer_add_nothing(self):
        self.assertEqual(serve.describe_error(ValueError("bad")).split(" (")[0], "ValueError: bad")
        with mock.patch.object(torch.cuda, "mem_get_info", side_effect=RuntimeError("no GPU")):
            try:
                raise torch.OutOfMemoryError("CUDA out of memory")
            except torch.OutOfMemoryError as e:
                self.assertNotIn("GiB", serve.describe_error(e))


class WarmUpTest(unittest.TestCase):
    def test_a_task_runner_imports_what_torch_compile_needs_before_its_load(self):
        # In a fresh interpreter: what the torch.compile runner's LOAD imports is there after
        # the warm-up, and nothing has been compiled.
        code = ("import sys, torch\n"
                "from kope_bridge import serve\n"
                "serve.warm_up(torch, 'cpu', compiler=False)\n"
                "print('inductor' if 'torch._inductor.compile_fx' in sys.modules else 'none')\n"
                "serve.warm_up(torch, 'cpu', compiler=True)\n"
                "print('inductor' if 'torch._inductor.compile_fx' in sys.modules else 'none')\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=300,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertEqual(done.stdout.split(), ["none", "inductor"])

    def test_a_warm_up_without_torch_compile_is_not_an_error(self):
        with mock.patch.object(torch, "compile", side_effect=RuntimeError("not on this Python")):
            serve.warm_up(torch, "cpu", compiler=True)


def cpu_kernel(call):
    """A TorchKernel on the CPU that runs `call(prepared)` instead of a problem."""
    kernel = object.__new__(kernels.TorchKernel)  # no problem loaded: the timing loop alone
    kernel.device, kernel.events, kernel.flusher = "cpu", None, None
    kernel.call = call
    kernel.prepare = lambda inputs: inputs
    return kernel


class TimedCallsTest(unittest.TestCase):
    def test_each_call_runs_after_the_previous_calls_results_are_gone(self):
        results, alive, last = [], [], []

        def call(prepared):
            alive.append(sum(r() is not None for r in results))
            out = [torch.zeros(1)]
            results.append(weakref.ref(out[0]))
            return out

        tally = kernels.Tally()
        cpu_kernel(call).timed_calls(["a", "b"], 5, None, 0, lambda k, r: last.append(k), tally)
        self.assertEqual(alive, [0] * 5)
        self.assertEqual(len(tally.ns), 5)
        self.assertEqual(last, [1, 0])  # the last call on each set: calls 4 (set b) and 5 (a)

    def test_only_a_verified_call_stores_its_outputs_in_the_arena(self):
        stored, checked = [], []
        kernel = cpu_kernel(lambda prepared: [torch.zeros(1)])
        kernel.checked = lambda results, outputs: checked.append(results) or results
        kernel.store = lambda results, outputs: stored.append(results)
        server = object.__new__(serve.Server)  # no runner: timed_calls alone
        server.kernel, server.inputs_resident, server.host_address = kernel, True, 0
        server.mirror, server.device_shared = None, False
        with mock.patch.object(serve.Server, "tensors", return_value=([], [])), \
                mock.patch.object(serve.Server, "ranges", return_value=[]):
            server.timed_calls([object(), object()], 6, False, verified=False)
            self.assertEqual(stored, [])  # timed outputs are dropped: nothing reads them
            self.assertEqual(len(checked), 2)  # once checked, the last call on each set
            server.timed_calls([object()], 1, False, verified=True)
        self.assertEqual(len(stored), 1)

    def test_a_failing_call_keeps_the_times_before_it(self):
        calls = []

        def call(prepared):
            calls.append(prepared)
            if len(calls) == 3:
                raise RuntimeError("the third call fails")
            return [torch.zeros(1)]

        tally = kernels.Tally()
        with self.assertRaises(RuntimeError):
            cpu_kernel(call).timed_calls(["a"], 5, None, 0, lambda k, r: None, tally)
        self.assertEqual(len(tally.ns), 2)



class RequestProfileTest(unittest.TestCase):
    def test_off_unless_asked(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("KOPE_BRIDGE_PROFILE", None)
            self.assertIsNone(serve.RequestProfile.from_environment())

    def test_a_snapshot_of_the_handlers_every_hundred_requests(self):
        import pstats
        import tempfile
        with tempfile.TemporaryDirectory() as folder, \
                mock.patch.dict(os.environ, {"KOPE_BRIDGE_PROFILE": folder}):
            profile = serve.RequestProfile.from_environment()
            for _ in range(2 * serve.RequestProfile.EVERY - 1):
                profile.enable()
                sorted(range(50))
                profile.disable()
            pid = os.getpid()
            self.assertEqual(sorted(os.listdir(folder)), [f"bridge-{pid}-100.pstats"])
            stats = pstats.Stats(os.path.join(folder, f"bridge-{pid}-100.pstats")).stats
            calls = [v[1] for k, v in stats.items() if k[2] == "<built-in method builtins.sorted>"]
            self.assertEqual(calls, [100])

if __name__ == "__main__":
    unittest.main()
