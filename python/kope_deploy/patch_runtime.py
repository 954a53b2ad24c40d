"""Installing a kernel in place of a module's forward: what a patch does inside a model, with
nothing but torch (kope's patch artifacts carry this file as it is, so that a user applies them
without kope installed).

A kernel is a ModelNew class in a Python file (the problem's source, then the candidate's, in one
file: the candidate sees the problem's names). It is installed on every module of the model of
the given type (and path pattern, where given) whose parameters include the kernel's, bound to
the module's own tensors (shared, not copied). Dispatch is keyed by shape: a call whose tensors
have one of the keys' shapes and dtypes, on the module's device, runs the kernel; every other
call runs the module's own forward. Calls are counted per key label (engagement), fallbacks
apart; `remove()` restores every module exactly.
"""
import collections
import importlib.util
import re

import torch

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "f64": torch.float64, "i64": torch.int64, "i32": torch.int32, "bool": torch.bool}


def load_kernel(path, name):
    """The module of the kernel file at `path` (a real file: Triton reads its kernels' source)."""
    spec = importlib.util.spec_from_file_location(f"kope_kernel_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if "ModelNew" not in module.__dict__:
        raise ValueError(f"{path}: defines no class ModelNew")
    return module


def key_of(args):
    return tuple((tuple(a.shape), a.dtype) for a in args)


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
        own = dict(m.named_parameters())
        first = own[self.parameters[0]] if self.parameters else None
        device = first.device if first is not None else torch.device("cpu")
        torch.manual_seed(0)
        with torch.device(device):
            kernel = self.kernel.ModelNew(*self.kernel.get_init_inputs()).eval()
        slots = [p for _, p in kernel.named_parameters()]
        if len(slots) != len(self.parameters):
            raise ValueError(f"{self.name}: ModelNew has {len(slots)} parameters, the task "
                             f"passes {len(self.parameters)}")
        for slot, name in zip(slots, self.parameters):
            slot.data = own[name].data
        original = m.__dict__.get("forward")
        fallback = m.forward

        def forward(*args, **kwargs):
            label = None
            if not kwargs and all(isinstance(a, torch.Tensor) and a.device == device
                                  for a in args):
                label = self.keys.get(key_of(args))
            if label is None:
                self.fallbacks["not a validated shape, dtype or device"] += 1
                return fallback(*args, **kwargs)
            self.calls[label] += 1
            return kernel(*args)

        m.forward = forward
        self.installed.append((m, path, original))

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
