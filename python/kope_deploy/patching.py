"""Patches: a task's accepted ModelNew candidate bound into the model in place of the forward of
every module the task's unit is (unit.json, written by extract.py), with the module's own
parameters, by shape-keyed dispatch: a call whose inputs match one of the task's size sets
(shapes, dtype, device of the module) runs the candidate; every other call runs the module's own
forward. Each patch counts its calls per key (engagement) and its fallbacks; `remove()` restores
every module exactly (nothing of the patch stays on it)."""
import collections
import json
import os
import re
import tomllib

import torch

from kope_bridge import problem

from .extract import UNIT_FORMAT

# For the units whose problem wraps the model's module whole: the prefix of the problem's
# parameter names before the module's own (`module.gate_proj.weight` is the MLP's
# `gate_proj.weight`).
PARAMETER_PREFIX = {"norm": "", "linear": "proj.", "mlp": "module.", "moe": "module.",
                    "experts": "module."}
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                "f64": torch.float64, "i64": torch.int64, "i32": torch.int32,
                "bool": torch.bool}


class PatchError(Exception):
    """A patch that cannot be made as asked: its message names the task or the candidate."""


def _shape(dims, sizes):
    out = []
    for d in dims:
        if isinstance(d, int):
            out.append(d)
        elif d in sizes:
            out.append(int(sizes[d]))
        else:  # an expression of the sizes (the importer writes products and sums)
            out.append(int(eval(d, {"__builtins__": {}}, dict(sizes))))
    return tuple(out)


def _load_task(folder):
    try:
        with open(os.path.join(folder, "unit.json")) as f:
            unit = json.load(f)
        with open(os.path.join(folder, "task.toml"), "rb") as f:
            task = tomllib.load(f)
    except (OSError, ValueError) as e:
        raise PatchError(f"{folder}: not a task extracted by kope deploy profile: {e}")
    if unit.get("format") != UNIT_FORMAT:
        raise PatchError(f"{folder}/unit.json: format {unit.get('format')!r}, "
                         f"expected {UNIT_FORMAT!r}")
    if unit["kind"] not in PARAMETER_PREFIX:
        raise PatchError(f"{folder}: a {unit['kind']} unit is not patched by module "
                         f"replacement (kinds: {', '.join(sorted(PARAMETER_PREFIX))})")
    return unit, task


def signatures(task):
    """{key: its sizes as text} for every size set: a key is the forward inputs' (shape,
    dtype)."""
    n_params = len(task.get("torch", {}).get("parameters", []))
    inputs = task["inputs"][:len(task["inputs"]) - n_params]
    sets = [(" ".join(f"{k}={v}" for k, v in s.items()), s)
            for s in [task["sizes"]["bench"]] + task["sizes"].get("check", [])]
    return {tuple((_shape(t["shape"], s), TORCH_DTYPES[t["dtype"]]) for t in inputs): label
            for label, s in sets}


class Patch:
    """One task's candidate, ready to install on a model."""

    def __init__(self, task_folder, candidate_path):
        self.task_folder, self.candidate_path = task_folder, candidate_path
        self.unit, self.task = _load_task(task_folder)
        self.name = self.task["name"]
        self.keys = signatures(self.task)
        names = self.task.get("torch", {}).get("parameters", [])
        prefix = PARAMETER_PREFIX[self.unit["kind"]]
        self.parameters = [n[len(prefix):] for n in names]  # the module's own names
        try:  # the candidate runs in the problem's namespace, as the bridge runs it
            problem_file = os.path.join(task_folder, self.task["baseline"]["torch"])
            with open(problem_file) as f:
                reference = f.read()
            with open(candidate_path) as f:
                source = f.read()
            self.module = problem.load_module(reference, os.path.basename(problem_file),
                                              self.task["sizes"]["bench"], extra=source)
        except Exception as e:
            raise PatchError(f"{candidate_path}: cannot load: {type(e).__name__}: {e}")
        if "ModelNew" not in self.module.__dict__:
            raise PatchError(f"{candidate_path}: defines no class ModelNew")
        self.calls = collections.Counter()      # key's size set label -> candidate calls
        self.fallbacks = collections.Counter()  # why -> calls the module's own forward ran
        self.installed = []                     # (module, path, the forward it had, if any)

    def targets(self, model):
        """(path, module) of every module the unit is whose parameters have the task's shapes."""
        regex = None
        if self.unit["pattern"]:
            regex = re.compile("^" + re.escape(self.unit["pattern"]).replace(r"\*", r"\d+") + "$")
        for path, m in model.named_modules():
            if type(m).__name__ != self.unit["module_type"]:
                continue
            if regex is not None and not regex.match(path):
                continue
            own = dict(m.named_parameters())
            if all(n in own for n in self.parameters):
                yield path, m

    def apply(self, model):
        """Installs the candidate on every target; the number installed (a PatchError if 0)."""
        for path, m in self.targets(model):
            self._install(path, m)
        if not self.installed:
            raise PatchError(f"{self.name}: no {self.unit['module_type']} of the model "
                             f"matches the task ({self.unit['pattern'] or 'any path'})")
        return len(self.installed)

    def _install(self, path, m):
        own = dict(m.named_parameters())
        first = own[self.parameters[0]] if self.parameters else None
        device = first.device if first is not None else torch.device("cpu")
        candidate = problem.build_model(self.module, "ModelNew", str(device)).eval()
        slots = [p for _, p in candidate.named_parameters()]
        if len(slots) != len(self.parameters):
            raise PatchError(f"{self.candidate_path}: ModelNew has {len(slots)} parameters, "
                             f"the task passes {len(self.parameters)}")
        with torch.no_grad():
            for slot, name in zip(slots, self.parameters):
                slot.data = own[name].data  # the module's own tensors, shared, not copied
        original = m.__dict__.get("forward")
        fallback = m.forward

        def forward(*args, **kwargs):
            label = None
            if not kwargs and all(isinstance(a, torch.Tensor) and a.device == device
                                  for a in args):
                label = self.keys.get(tuple((tuple(a.shape), a.dtype) for a in args))
            if label is None:
                self.fallbacks["not a validated shape, dtype or device"] += 1
                return fallback(*args, **kwargs)
            self.calls[label] += 1
            return candidate(*args)

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
