"""What the bridge runs: a PyTorch problem (eager or torch.compile) or a ModelNew candidate, on
tensors that live in kope's arena (host memory, mirrored on the GPU for a CUDA runner).

Inputs of a call are the problem's forward inputs, then its parameters in named_parameters()
order (the task's `[torch] parameters`). The module computes with the arena's tensors, not
copies: an eager module's parameters are set to them around each call, outside its timed region
(BoundForward); torch.compile's forward takes them through torch.func.functional_call. Outputs
are copied into the arena's output slots after the timed region.
"""
import contextlib
import ctypes
import json
import os

import torch

from . import clock
from . import problem
from .protocol import DTYPES

# aten operations a candidate may use when the task forbids PyTorch's compute operations:
# allocation, views, metadata and copies, not arithmetic.
ALLOWED_WHEN_FORBIDDEN = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t",
    "contiguous", "clone", "copy_", "_to_copy", "detach", "alias", "lift_fresh", "size", "stride",
    "sym_size", "sym_stride", "sym_numel", "unsqueeze", "squeeze", "flatten", "select", "slice",
    "split", "chunk", "unbind", "resize_", "set_", "is_contiguous", "_local_scalar_dense",
    "fill_", "zero_", "record_stream",
}


class ForbiddenOp(Exception):
    pass


class _OpGuard(torch.utils._python_dispatch.TorchDispatchMode):
    """Fails on the first aten compute operation (a candidate that falls back to PyTorch)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if func.namespace == "aten" and name.rstrip("_") not in ALLOWED_WHEN_FORBIDDEN and \
                name not in ALLOWED_WHEN_FORBIDDEN:
            raise ForbiddenOp(f"the candidate called the PyTorch operation aten.{name}, "
                              "which this task forbids")
        return func(*args, **(kwargs or {}))


class KernelError(Exception):
    """The loaded problem or candidate failed on a call (reported as a non-zero return)."""


class BoundForward:
    """An eager module's forward on the arena's parameters: each of the module's Parameter
    objects is given the arena's tensor as its data for the call (`bound`), then its own again,
    so that nothing outlives the call's arena. torch.func.functional_call substitutes them
    inside the call instead, which costs time inside a timed region (the eager baseline's). A timed loop binds before
    its clock starts; a call made unbound binds itself."""

    def __init__(self, model):
        self.model = model
        self.slots = [p for _, p in model.named_parameters()]
        self.own = [p.data for p in self.slots]
        self.params = None  # the list of tensors bound, while bound

    @contextlib.contextmanager
    def bound(self, params):
        if len(params) != len(self.slots):
            raise KernelError(f"the module has {len(self.slots)} parameters, the call passes "
                              f"{len(params)}")
        self.params = params
        try:
            for slot, t in zip(self.slots, params):
                slot.data = t
            yield
        finally:
            for slot, own in zip(self.slots, self.own):
                slot.data = own
            self.params = None

    def __call__(self, params, inputs):
        if self.params is params:
            return self._arena_tensors(self.model(*inputs), params)
        with self.bound(params):
            return self._arena_tensors(self.model(*inputs), params)

    def _arena_tensors(self, out, params):
        """The outputs, a parameter returned as it is (a forward that returns its weight) as
        the arena's tensor, which functional_call would have returned: the Parameter object
        gets its own data back after the call."""
        arena = {id(slot): t for slot, t in zip(self.slots, params)}
        if isinstance(out, (tuple, list)):
            return [arena.get(id(o), o) for o in out]
        return arena.get(id(out), out)


class TorchKernel:
    def __init__(self, spec, device):
        self.spec = spec
        self.device = device
        self.mode = spec["mode"]
        self.n_forward = spec["n_forward_inputs"]
        self.parameters = spec["parameters"]
        self.scalars = set(spec.get("scalars", []))  # forward inputs passed as Python numbers
        self.scalars_warmed = set()  # input shapes whose compiled forward has seen two values
        self.forbid = spec.get("torch_ops", "allow") == "forbid" and self.mode == "modelnew"
        self.size_sets = spec["size_sets"]
        self.source = spec["problem"]
        self.candidate = spec.get("candidate")
        self.models = {}  # input-shape signature -> (callable, parameter names of that module)
        flush_library = spec.get("flush_library")
        self.flusher = None
        if device == "cpu" and flush_library:
            lib = ctypes.CDLL(flush_library)
            lib.kope_flush_from_caches.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            lib.kope_flush_from_caches.restype = ctypes.c_int
            self.flusher = lib.kope_flush_from_caches
        self.l2_buffer = None
        cache = spec.get("compile_cache")
        if cache and self.mode in ("eager", "compile"):
            # Persistent across evaluations: a problem compiled once is loaded from here, and
            # so are the reference's comparisons (comparison.py). A candidate never gets it.
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
            os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
        # Build the model at the first size set now: a broken candidate fails at LOAD.
        self._model_for(None)

    # -- models per size set ------------------------------------------------------------------
    def _module(self, globals_):
        extra = self.candidate if self.mode == "modelnew" else None
        return problem.load_module(self.source, self.spec.get("problem_name", "problem.py"),
                                   globals_, extra)

    def _model_for(self, shapes):
        """The callable for calls whose inputs (forward inputs, then parameters) have `shapes`
        (None: the first set)."""
        if shapes is None and self.size_sets and "shapes" in self.size_sets[0]:
            shapes = self.size_sets[0]["shapes"]  # kept under its shapes, for its calls
        key = None if shapes is None else tuple(tuple(s) for s in shapes)
        if key in self.models:
            return self.models[key]
        chosen = None
        wanted = None if shapes is None else [list(s) for s in shapes]
        for size_set in self.size_sets:
            known = size_set.get("shapes")  # every input's shape, where the spec says
            if known is not None and wanted is not None and known != wanted:
                continue
            module = self._module(size_set["globals"])
            if known is None and wanted is not None:  # the forward inputs' shapes must do
                torch.manual_seed(0)
                with torch.device("meta"):
                    meta = module.get_inputs()
                if [problem.shape_of(t) for t in meta[:self.n_forward]] != \
                        wanted[:self.n_forward]:
                    continue
            chosen = module
            break
        if chosen is None:
            raise KernelError("no size set of the task has input shapes "
                              f"{list(key) if key is not None else '(none given)'}")
        cls = "ModelNew" if self.mode == "modelnew" else "Model"
        if cls not in chosen.__dict__:
            raise KernelError("the candidate defines no class ModelNew")
        model = problem.build_model(chosen, cls, self.device)
        names = [n for n, _ in model.named_parameters()]
        if len(names) != len(self.parameters):
            raise KernelError(f"{cls} has {len(names)} parameters, the task passes "
                              f"{len(self.parameters)} ({', '.join(self.parameters) or 'none'})")

        def forward(params, inputs):
            if not names:  # nothing to substitute: the module as it is
                return model(*inputs)
            return torch.func.functional_call(model, dict(zip(names, params)), tuple(inputs))

        if self.mode == "compile":
            fn = torch.compile(forward)
        else:
            fn = BoundForward(model) if names else forward
        self.models[key] = (fn, model)
        return self.models[key]

    # -- calls --------------------------------------------------------------------------------
    def run(self, inputs):
        """One forward on arena tensors; returns the outputs as a list of tensors."""
        return self.call(self.prepare(inputs))

    def prepare(self, inputs):
        """What a forward on arena tensors needs, made before any clock starts: the callable,
        the parameters, and the forward inputs, with Python numbers for the task's scalars
        (read from the device: a synchronization)."""
        key = tuple(tuple(t.shape) for t in inputs)
        fn, _ = self._model_for([list(s) for s in key])
        forward_inputs = [t.item() if i in self.scalars else t
                          for i, t in enumerate(inputs[:self.n_forward])]
        params = inputs[self.n_forward:]
        if self.mode == "compile" and self.scalars and key not in self.scalars_warmed:
            # torch.compile specializes a float argument at its first value and compiles again,
            # with the float dynamic, at the second: both here, not in a timed call.
            self.scalars_warmed.add(key)
            for nudge in (0.25, 0.5):
                nudged = [v + nudge if i in self.scalars and isinstance(v, float) else v
                          for i, v in enumerate(forward_inputs)]
                try:
                    self.call((fn, params, nudged))
                except Exception:  # noqa: BLE001 (a value the problem refuses: no warm-up)
                    break
        return fn, params, forward_inputs

    def call(self, prepared):
        """One forward of `prepare`'s result; the outputs as a list of tensors."""
        fn, params, forward_inputs = prepared
        with torch.no_grad():
            if self.forbid:
                with _OpGuard():
                    out = fn(params, forward_inputs)
            else:
                out = fn(params, forward_inputs)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    @staticmethod
    def checked(results, outputs):
        """The forward's results, after checking that they are what the arena's output slots
        take (count, type, dtype, elements)."""
        if len(results) != len(outputs):
            raise KernelError(f"forward returned {len(results)} tensors, the task expects "
                              f"{len(outputs)}")
        for k, (r, o) in enumerate(zip(results, outputs)):
            if not isinstance(r, torch.Tensor):
                raise KernelError(f"output {k} is a {type(r).__name__}, not a tensor")
            if r.dtype != o.dtype:
                raise KernelError(f"output {k} has dtype {r.dtype}, the task expects {o.dtype}")
            if r.numel() != o.numel():
                raise KernelError(f"output {k} has shape {list(r.shape)}, the task expects "
                                  f"{list(o.shape)}")
        return results

    def store(self, results, outputs):
        for r, o in zip(self.checked(results, outputs), outputs):
            o.copy_(r.reshape(o.shape))

    def flush(self, ranges, host_address):
        """Evicts the call's bytes from the caches (host: clflush of each byte range; GPU: a
        write of twice the L2 size); returns the bytes flushed."""
        if self.device == "cpu":
            if self.flusher is None:
                return 0
            for offset, nbytes in ranges:
                self.flusher(host_address + offset, nbytes)
            return sum(n for _, n in ranges)
        if self.l2_buffer is None:
            l2 = torch.cuda.get_device_properties(self.device).L2_cache_size or (64 << 20)
            self.l2_buffer = torch.empty(2 * l2, dtype=torch.uint8, device=self.device)
        self.l2_buffer.zero_()
        return self.l2_buffer.numel()

    def timed(self, inputs, flush_ranges, host_address):
        """One call timed; returns (ns, results, flushed bytes). `flush_ranges` is None when the
        caches are not flushed."""
        out, tally = [], Tally()
        self.timed_calls([self.prepare(inputs)], 1,
                         None if flush_ranges is None else [flush_ranges], host_address,
                         lambda k, results: out.append(results), tally)
        return tally.ns[0], out[0], tally.flushed

    def timed_calls(self, prepared, count, flush_ranges, host_address, last, tally):
        """`count` calls, each timed, rotating over `prepared` (prepare's results, one per input
        set); with `flush_ranges` (one list per set) the caches are flushed before every call.
        `last(k, results)` gets the results of each set's last call; each call's results go
        before the next call runs (a problem's output can be gigabytes). Each call's ns and
        the bytes flushed go to `tally` as they come (a call that fails leaves the ones before).

        On the CPU a call's results are released inside its timed region: freeing the
        outputs it allocated is its work, as allocating them was. Released between calls,
        outside the timer and inside the parent's clock, that work is time a candidate
        leaves unexplained (src/eval/timing_claim.h) which a baseline that writes its input
        in place and returns it does not: microseconds a call, which for calls of tens of
        microseconds reach the share a timer that reports less leaves.

        The clocks are kope's own (clock.py), taken before any candidate code ran. On a GPU:
        CUDA events around each call, a device-wide synchronize before the start event (the
        host's launch is inside the timed region) and before the end event (work on any stream
        ends inside it); calls that left work on streams the harness's stream never waits on
        are counted in the tally. The next call's flush is launched as soon as the end event is
        recorded, so the GPU flushes while the host reads the time and a short kernel's host
        work between calls overlaps the flush."""
        n = len(prepared)
        if self.device == "cpu":
            for i in range(count):
                k = i % n
                if flush_ranges is not None:
                    tally.flushed += self.flush(flush_ranges[k], host_address)
                with _bound(prepared[k]):
                    start = clock.now_ns()
                    results = self.call(prepared[k])
                    if i + n < count:
                        results = None  # released on the clock: see above
                    tally.ns.append(clock.now_ns() - start)
                if results is not None:
                    last(k, results)
                    results = None
            return
        timer = clock.device_clock(torch, self.device)
        if flush_ranges is not None and count > 0:
            tally.flushed += self.flush(flush_ranges[0], host_address)
        for i in range(count):
            k = i % n
            results = None
            with _bound(prepared[k]):
                timer.begin()
                results = self.call(prepared[k])
                timer.finish()
            if flush_ranges is not None and i + 1 < count:
                tally.flushed += self.flush(flush_ranges[(i + 1) % n], host_address)
            ns, hidden = timer.elapsed()
            tally.ns.append(ns)
            if hidden:
                tally.side_stream_calls += 1
                tally.side_stream_ns += hidden
            if i + n >= count:
                last(k, results)


class Tally:
    """What timed calls measured: each call's ns, and the bytes flushed from the caches."""

    def __init__(self):
        self.ns, self.flushed = [], 0
        # Calls whose work went on after the harness's stream was done (on a GPU), and that
        # work's ns: charged to the calls, and said in the reply (side_stream_note).
        self.side_stream_calls, self.side_stream_ns = 0, 0

    def side_stream_note(self):
        """The TIME reply's message where calls left work on other streams, else ""."""
        if not self.side_stream_calls:
            return ""
        return json.dumps({"side_stream_calls": self.side_stream_calls, "calls": len(self.ns),
                           "side_stream_ns": self.side_stream_ns})


def _bound(prepared):
    """The context a prepared call's parameters are bound in, outside its timed region."""
    if isinstance(prepared, tuple) and isinstance(prepared[0], BoundForward):
        return prepared[0].bound(prepared[1])
    return contextlib.nullcontext()


def torch_dtype(kope_dtype):
    return getattr(torch, DTYPES[kope_dtype][0])


def compared_dtype(kope_dtype):
    """The dtype an output of `kope_dtype` is compared in: a bool as its byte (uint8), so that
    a byte that is neither 0 nor 1 (a poison, an unwritten element) shows as what it is."""
    t = torch_dtype(kope_dtype)
    return torch.uint8 if t == torch.bool else t
