"""Installing a kernel in place of a module's forward: what a patch does inside a model, with
nothing but torch (kope's patch artifacts carry this file as it is, so that a user applies them
without kope installed).

A kernel is either a ModelNew class in a Python file (the problem's source, then the candidate's,
in one file: the candidate sees the problem's names), or a native kernel in kope's C ABI (a shared
object exporting `kope_kernel`), called as a `torch.library` custom op with a fake
implementation, on the current CUDA stream, so that torch.compile and CUDA-graph capture keep
working. It is installed on every module of the model of the given type (and path pattern, where
given) whose parameters include the kernel's, bound to the module's own tensors (shared, not
copied): a native kernel gets the call's tensors, then those parameters, as its inputs. Dispatch is keyed by shape: a call whose tensors
have one of the keys' shapes and dtypes, on the module's device, runs the kernel; every other
call runs the module's own forward. Calls are counted per key label (engagement), fallbacks
apart; `remove()` restores every module exactly.
"""
import collections
import ctypes
import importlib.util
import re

import torch

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "f64": torch.float64, "i64": torch.int64, "i32": torch.int32, "bool": torch.bool}


ABI_DTYPES = {torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3,
              torch.int32: 4, torch.int64: 5, torch.bool: 6}  # kope_dtype (kope/kernel.h)
MAX_DIMS = 8


def load_kernel(path, name):
    """The module of the kernel file at `path` (a real file: Triton reads its kernels' source)."""
    spec = importlib.util.spec_from_file_location(f"kope_kernel_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if "ModelNew" not in module.__dict__:
        raise ValueError(f"{path}: defines no class ModelNew")
    return ModelNewKernel(module)


def key_of(args):
    return tuple((tuple(a.shape), a.dtype) for a in args)


class ModelNewKernel:
    """A ModelNew class, instantiated per module with the module's parameters bound in."""

    def __init__(self, module):
        self.module = module

    def bind(self, name, own, parameters, device):
        torch.manual_seed(0)
        with torch.device(device):
            kernel = self.module.ModelNew(*self.module.get_init_inputs()).eval()
        slots = [p for _, p in kernel.named_parameters()]
        if len(slots) != len(parameters):
            raise ValueError(f"{name}: ModelNew has {len(slots)} parameters, the task "
                             f"passes {len(parameters)}")
        for slot, n in zip(slots, parameters):
            slot.data = own[n].data
        return lambda label, args: kernel(*args)


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS)]


def _describe(t):
    d = _Tensor()
    d.data, d.dtype, d.ndim = t.data_ptr(), ABI_DTYPES[t.dtype], t.dim()
    for i in range(t.dim()):
        d.shape[i], d.strides[i] = t.shape[i], t.stride(i)
    return d


class NativeKernel:
    """A shared object exporting kope_kernel. `outputs`: {key label: [(shape, torch dtype)]},
    the outputs it writes at each validated size set."""

    def __init__(self, path, name, outputs):
        self.path, self.name, self.outputs = path, name, outputs
        self.function = ctypes.CDLL(path).kope_kernel
        self.function.restype = ctypes.c_int
        self.function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                                  ctypes.c_void_p]
        self.op = _custom_op(self)

    def run(self, label, tensors):
        """Calls the kernel on contiguous copies of `tensors`; its outputs."""
        tensors = [t.contiguous() for t in tensors]
        device = tensors[0].device
        outs = [torch.empty(shape, dtype=dtype, device=device)
                for shape, dtype in self.outputs[label]]
        ins = (_Tensor * len(tensors))(*[_describe(t) for t in tensors])
        described = (_Tensor * len(outs))(*[_describe(t) for t in outs])
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None
        rc = self.function(ctypes.addressof(ins), len(tensors), ctypes.addressof(described),
                           len(outs), stream)
        if rc != 0:
            raise RuntimeError(f"{self.name}: the kernel returned {rc}")
        return outs

    def bind(self, name, own, parameters, device):
        bound = [own[n] for n in parameters]

        def call(label, args):
            outs = self.op(list(args) + bound, label)
            return outs[0] if len(outs) == 1 else tuple(outs)
        return call


_OPS = {}


def _custom_op(kernel):
    """kope::<name> as a custom op (opaque to torch.compile, its outputs' shapes from the fake
    implementation); the kernel's own run where torch has no torch.library.custom_op."""
    if not hasattr(torch.library, "custom_op"):
        return kernel.run
    name = "kope::" + re.sub(r"\W", "_", kernel.name)
    if name in _OPS:  # one registration per process; the latest kernel of that name serves
        _OPS[name][1][0] = kernel
        return _OPS[name][0]
    current = [kernel]

    @torch.library.custom_op(name, mutates_args=())
    def op(tensors: list[torch.Tensor], label: str) -> list[torch.Tensor]:
        return current[0].run(label, tensors)

    @op.register_fake
    def _(tensors, label):
        return [tensors[0].new_empty(shape, dtype=dtype)
                for shape, dtype in current[0].outputs[label]]

    _OPS[name] = (op, current)
    return op


class KernelPatch:
    """`keys`: {((shape, torch dtype), ...) per forward input: label}; `parameters`: the
    module's own parameter names, in the order of ModelNew's parameters."""

    def __init__(self, name, kernel, module_type, pattern, parameters, keys):
        self.name, self.kernel = name, kernel
        self.module_type, self.pattern = module_type, pattern
        self.parameters, self.keys = list(parameters), dict(keys)
        self.calls = collections.Counter()      # key label -> kernel calls
        self.fallbacks = collections.Counter()  # why -> calls the module's own forward ran
        self.installed = []                     # (module, path, the forward it had, if any)
        self.bound = {}  # id(module) -> (module, its patched forward, the fallback's cell)

    def targets(self, model):
        """(path, module) of every module it applies to."""
        regex = None
        if self.pattern:
            regex = re.compile("^" + re.escape(self.pattern).replace(r"\*", r"\d+") + "$")
        for path, m in model.named_modules():
            if type(m).__name__ != self.module_type or (regex and not regex.match(path)):
                continue
            own = dict(m.named_parameters())
            if all(n in own for n in self.parameters):
                yield path, m

    def apply(self, model):
        """Installs the kernel on every target; how many (a ValueError if none)."""
        for path, m in self.targets(model):
            self._install(path, m)
        if not self.installed:
            raise ValueError(f"{self.name}: no {self.module_type} of the model matches "
                             f"({self.pattern or 'any path'})")
        return len(self.installed)

    def _install(self, path, m):
        # One forward per module, made on its first install and kept: a re-applied patch is the
        # same function (what a captured CUDA graph of the model was recorded with).
        if id(m) not in self.bound:
            self.bound[id(m)] = (m, *self._forward(m))
        _, forward, fallback = self.bound[id(m)]
        original = m.__dict__.get("forward")
        fallback[0] = m.forward  # what runs the calls it does not take, as of this install
        m.forward = forward
        self.installed.append((m, path, original))

    def _forward(self, m):
        """The module's patched forward, and the cell holding the forward it falls back to."""
        own = dict(m.named_parameters())
        first = own[self.parameters[0]] if self.parameters else None
        device = first.device if first is not None else torch.device("cpu")
        kernel = self.kernel.bind(self.name, own, self.parameters, device)
        fallback = [m.forward]

        def forward(*args, **kwargs):
            label = None
            if not kwargs and all(isinstance(a, torch.Tensor) and a.device == device
                                  for a in args):
                label = self.keys.get(key_of(args))
            if label is None:
                self.fallbacks["not a validated shape, dtype or device"] += 1
                return fallback[0](*args, **kwargs)
            self.calls[label] += 1
            return kernel(label, args)
        return forward, fallback

    def remove(self):
        """Restores every module it was installed on."""
        for m, _, original in self.installed:
            if original is None:
                del m.forward
            else:
                m.forward = original
        self.installed = []

    def engagement(self):
        return {"task": self.name, "modules": [p for _, p, _ in self.installed],
                "calls": dict(self.calls), "fallbacks": dict(self.fallbacks),
                "engaged": sum(self.calls.values()) > 0}
