"""Patches from kope's tasks: a task that `kope deploy profile` extracted (unit.json says which
modules of the model it is) and a ModelNew candidate of it, as a patch_runtime.KernelPatch whose
keys are the task's size sets. Installing, dispatch and removal are patch_runtime's."""
import json
import os
import tomllib

from kope_bridge import problem

from .extract import UNIT_FORMAT
from .patch_runtime import DTYPES, KernelPatch, load_kernel

# For the units whose problem wraps the model's module whole: the prefix of the problem's
# parameter names before the module's own (`module.gate_proj.weight` is the MLP's
# `gate_proj.weight`).
PARAMETER_PREFIX = {"norm": "", "linear": "proj.", "mlp": "module.", "moe": "module.",
                    "experts": "module."}


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
    """[(label, [(shape, dtype name)] per forward input)] for every size set: its sizes as text,
    the shapes and dtypes a call must have to run the kernel."""
    n_params = len(task.get("torch", {}).get("parameters", []))
    inputs = task["inputs"][:len(task["inputs"]) - n_params]
    return [(" ".join(f"{k}={v}" for k, v in s.items()),
             [(list(_shape(t["shape"], s)), t["dtype"]) for t in inputs])
            for s in [task["sizes"]["bench"]] + task["sizes"].get("check", [])]


def runtime_keys(signed):
    return {tuple((tuple(shape), DTYPES[dtype]) for shape, dtype in key): label
            for label, key in signed}


class Patch(KernelPatch):
    """A task's candidate, ready to install on a model."""

    def __init__(self, task_folder, candidate_path):
        self.task_folder, self.candidate_path = task_folder, candidate_path
        self.unit, self.task = _load_task(task_folder)
        self.signatures = signatures(self.task)
        prefix = PARAMETER_PREFIX[self.unit["kind"]]
        parameters = [n[len(prefix):] for n in self.task.get("torch", {}).get("parameters", [])]
        try:  # the candidate runs in the problem's namespace, as the bridge runs it
            with open(os.path.join(task_folder, self.task["baseline"]["torch"])) as f:
                self.source = f.read()
            with open(candidate_path) as f:
                self.source += "\n\n" + f.read()
            path = problem.source_file(self.source, "kernel.py")
            kernel = load_kernel(path, self.task["name"])
        except Exception as e:
            raise PatchError(f"{candidate_path}: cannot load: {type(e).__name__}: {e}")
        super().__init__(self.task["name"], kernel, self.unit["module_type"],
                         self.unit["pattern"], parameters, runtime_keys(self.signatures))

    def apply(self, model):
        try:
            return super().apply(model)
        except ValueError as e:
            raise PatchError(str(e))
