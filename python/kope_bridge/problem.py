"""KernelBench-format problems: a Python file defining `Model`, `get_inputs()` and
`get_init_inputs()`, with its sizes as module-level integers (e.g. `batch_size = 4096`).

A problem is loaded from its source text with chosen values for those integers (its "globals"), so
one file yields the model at the bench size and at small check sizes alike. The problem's and a
candidate's code run from real files (`source_file`), so that what reads a function's source
(Triton's @triton.jit, inspect.getsource) finds it.
"""
import ast
import atexit
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import types

import torch


def int_globals(source):
    """The integers the module assigns at its top level (`batch_size = 4096`, `N = 2048 * 2`),
    with their values after execution, in file order."""
    names = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            for n in t.elts if isinstance(t, ast.Tuple) else [t]:  # depth, height = 16, 32
                if isinstance(n, ast.Name) and n.id not in names:
                    names.append(n.id)
    module = types.ModuleType("problem")
    exec(compile(source, source_file(source, "problem.py"), "exec"), module.__dict__)
    return {n: module.__dict__[n] for n in names if type(module.__dict__.get(n)) is int}


_loaded = 0
# Where source_file writes: $KOPE_BRIDGE_MODULES (a bridge process's scratch folder), else a
# temporary folder of this process.
_folder = os.environ.get("KOPE_BRIDGE_MODULES")


def source_file(source, name):
    """A file holding `source`, named `name` (its base name) in a folder named by the content
    hash of both, written once: code compiled from it has a real file name, whose lines
    inspect.getsource and Triton's @triton.jit read."""
    global _folder
    if _folder is None:
        _folder = tempfile.mkdtemp(prefix="kope-modules-")
        atexit.register(shutil.rmtree, _folder, True)
    base = os.path.basename(name) or "module.py"
    digest = hashlib.sha256(f"{base}\0{source}".encode()).hexdigest()[:16]
    path = os.path.join(_folder, digest, base)
    if not os.path.isfile(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}.partial"
        with open(partial, "w") as f:
            f.write(source)
        os.replace(partial, path)
    return path


def _with_values(source, name, overrides):
    """`source` compiled with each top-level assignment to a name in `overrides` assigning its
    value instead, so that what the file derives from it afterwards follows
    (`bias_shape = (out_channels, 1, 1)`). A chained assignment (`height = width = 128`) and
    one of a tuple of names (`depth, height = 16, 32`) become one assignment per name. Other
    statements are left as they are."""
    tree = ast.parse(source, name)
    body = []
    for node in tree.body:
        for statement in _one_per_name(node):
            body.extend(_substituted(statement, overrides))
    tree.body = body
    return compile(ast.fix_missing_locations(tree), name, "exec")


def _one_per_name(node):
    """`node`, or where it assigns a tuple of values to as many names, one assignment each."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
            isinstance(node.targets[0], ast.Tuple) and \
            isinstance(node.value, (ast.Tuple, ast.List)) and \
            len(node.value.elts) == len(node.targets[0].elts) and \
            all(isinstance(t, ast.Name) for t in node.targets[0].elts):
        return [ast.copy_location(ast.Assign(targets=[t], value=v), node)
                for t, v in zip(node.targets[0].elts, node.value.elts)]
    return [node]


def _substituted(node, overrides):
    """The statements that stand for `node`: an assignment to names in `overrides` assigns
    their values (one statement per name of a chained assignment)."""
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets) \
            and any(t.id in overrides for t in node.targets):
        return [ast.copy_location(ast.Assign(
            targets=[t],
            value=ast.Constant(overrides[t.id]) if t.id in overrides else node.value), node)
            for t in node.targets]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
            node.value is not None and node.target.id in overrides:
        node.value = ast.copy_location(ast.Constant(overrides[node.target.id]), node.value)
    return [node]


def load_module(source, name, overrides=None, extra=None):
    """Executes `source` as a module with the integer globals in `overrides` assigned their
    values where the file assigns them (so that globals derived from them follow), and set
    again afterwards (whatever the file did to them since).

    Module-level integers are read by get_inputs()/get_init_inputs() when they are called, so
    their values resize the problem. `extra` is executed in the same namespace afterwards (a
    ModelNew candidate sees the problem's names, as in KernelBench).
    """
    global _loaded
    _loaded += 1
    module = types.ModuleType(f"kope_problem_{_loaded}")
    path = source_file(source, name)
    module.__file__ = path
    # torch.compile looks modules up by name: a registered module keeps it happy.
    sys.modules[module.__name__] = module
    overrides = overrides or {}
    code = _with_values(source, path, overrides) if overrides else compile(source, path, "exec")
    exec(code, module.__dict__)
    for key, value in overrides.items():
        module.__dict__[key] = value
    for required in ("Model", "get_inputs", "get_init_inputs"):
        if required not in module.__dict__:
            raise ValueError(f"{name}: defines no {required}")
    if extra is not None:
        return _candidate_module(extra, module)
    return module


def _candidate_module(source, problem_module):
    """A candidate imported from its file (importlib) as a module of its own that starts with
    the problem's names (KernelBench's ModelNew may use Model and the problem's sizes):
    inspect.getsource finds its functions, by their file and their module's."""
    path = source_file(source, "candidate.py")
    name = f"{problem_module.__name__}_candidate"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    for key, value in problem_module.__dict__.items():
        if not (key.startswith("__") and key.endswith("__")):
            module.__dict__[key] = value
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def build_model(module, cls_name="Model", device="cpu", seed=0):
    """Instantiates `cls_name(*get_init_inputs())` on `device` with a fixed seed, in eval-free
    (training) mode as KernelBench does."""
    torch.manual_seed(seed)
    init = module.get_init_inputs()
    with torch.device(device):
        model = getattr(module, cls_name)(*init)
    return model


# A forward argument that is a Python number: the dtype of the 0-d input that carries it.
SCALAR_DTYPES = {float: "float64", int: "int64"}


def shape_of(value):
    """A forward argument's shape as a task writes it: a tensor's, [1] for a 0-d tensor or a
    Python number."""
    return (list(value.shape) if isinstance(value, torch.Tensor) else []) or [1]


def describe(module, device="meta"):
    """Shapes and dtypes of inputs, parameters and outputs, without computing (meta device)."""
    torch.manual_seed(0)
    with torch.device(device):
        inputs = module.get_inputs()
        model = build_model(module, device=device)
        with torch.no_grad():
            out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]

    def info(t):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"expected tensors, got {type(t).__name__}")
        return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)}

    def input_info(v):  # a Python number for forward: a 0-d input, passed as a number
        if type(v) in SCALAR_DTYPES:
            return {"dtype": SCALAR_DTYPES[type(v)], "shape": [], "scalar": True}
        return info(v)

    return {
        "inputs": [input_info(t) for t in inputs],
        "parameters": [dict(info(p), name=n) for n, p in model.named_parameters()],
        "outputs": [info(t) for t in outs],
    }
