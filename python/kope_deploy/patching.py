"""Patches from kope's tasks: a task that `kope deploy profile` extracted (unit.json says which
modules of the model it is) and a candidate of it (a ModelNew `.py`, or a native kernel with the
shared object kope compiled from it), as a patch_runtime.KernelPatch whose keys are the task's
size sets. Installing, dispatch and removal are patch_runtime's."""
import json
import os
import tomllib

from kope_bridge import problem

from .extract import PATCHED_UNITS, UNIT_FORMAT
from .patch_runtime import DTYPES, KernelPatch, NativeKernel, load_kernel


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
    if unit["kind"] not in PATCHED_UNITS:
        raise PatchError(f"{folder}: a {unit['kind']} unit is not patched by module "
                         f"replacement (kinds: {', '.join(sorted(PATCHED_UNITS))})")
    return unit, task


def _size_sets(task):
    return [task["sizes"]["bench"]] + task["sizes"].get("check", [])


def _label(sizes):
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def signatures(task):
    """[(label, [(shape, dtype name)] per forward input)] for every size set: its sizes as text,
    the shapes and dtypes a call must have to run the kernel."""
    n_params = len(task.get("torch", {}).get("parameters", []))
    inputs = task["inputs"][:len(task["inputs"]) - n_params]
    return [(_label(s), [(list(_shape(t["shape"], s)), t["dtype"]) for t in inputs])
            for s in _size_sets(task)]


def output_signatures(task):
    """{label: [(shape, dtype name)] per output}: what a native kernel writes at each size set."""
    return {_label(s): [(list(_shape(t["shape"], s)), t["dtype"]) for t in task["outputs"]]
            for s in _size_sets(task)}


def runtime_keys(signed):
    return {tuple((tuple(shape), DTYPES[dtype]) for shape, dtype in key): label
            for label, key in signed}


class Patch(KernelPatch):
    """A task's candidate, ready to install on a model: a ModelNew `.py`, or a native kernel's
    source with `compiled`, the shared object kope built from it."""

    def __init__(self, task_folder, candidate_path, compiled=None):
        self.task_folder, self.candidate_path = task_folder, candidate_path
        self.compiled = compiled
        self.unit, self.task = _load_task(task_folder)
        self.signatures = signatures(self.task)
        self.output_signatures = output_signatures(self.task)
        prefix = PATCHED_UNITS[self.unit["kind"]]
        parameters = [n[len(prefix):] for n in self.task.get("torch", {}).get("parameters", [])]
        try:
            kernel = self._load()
        except Exception as e:
            raise PatchError(f"{candidate_path}: cannot load: {type(e).__name__}: {e}")
        super().__init__(self.task["name"], kernel, self.unit["module_type"],
                         self.unit["pattern"], parameters, runtime_keys(self.signatures))

    @property
    def kind(self):
        return "modelnew" if self.compiled is None else "native"

    def _load(self):
        if self.compiled is not None:
            with open(self.candidate_path) as f:
                self.source = f.read()
            outputs = {label: [(shape, DTYPES[dtype]) for shape, dtype in outs]
                       for label, outs in self.output_signatures.items()}
            return NativeKernel(self.compiled, self.task["name"], outputs)
        # A ModelNew runs in the problem's namespace, as the bridge runs it.
        with open(os.path.join(self.task_folder, self.task["baseline"]["torch"])) as f:
            self.source = f.read()
        with open(self.candidate_path) as f:
            self.source += "\n\n" + f.read()
        return load_kernel(problem.source_file(self.source, "kernel.py"), self.task["name"])

    def apply(self, model):
        try:
            return super().apply(model)
        except ValueError as e:
            raise PatchError(str(e))
