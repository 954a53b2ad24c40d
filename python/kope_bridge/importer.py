"""`kope import kernelbench`: KernelBench problem files -> kope task folders.

For one problem file it finds the sizes (the file's module-level integers), runs the model on
PyTorch's meta device to learn every tensor's shape and dtype without computing, derives small
check size sets and a CPU bench set by shrinking those integers, measures the value ranges of the
inputs and parameters on a small real instance, and writes `task.toml` plus a copy of the file.
"""
import argparse
import inspect
import json
import math
import os
import re
import sys

import torch

from . import problem
from .protocol import DTYPES
from .serve import apply_limits
from .value_laws import (fan_in_distributions, input_distributions, integer_ranges,  # noqa: F401
                         measure_values, scalar_distribution, value_distribution)

# torch's dtype name -> kope's name and element size; protocol.DTYPES is keyed by kope's DType
# (include/kope/kernel.h), whose names in that order are these.
_KOPE_NAMES = ("f32", "f64", "f16", "bf16", "i32", "i64", "bool")
KOPE_DTYPES = {torch_name: (_KOPE_NAMES[k], size) for k, (torch_name, size) in DTYPES.items()}
# By dtype, rtol = atol: KernelBench's own (get_tolerance_for_precision in
# src/kernelbench/eval.py of KernelBench 0.2.0.dev0, commit 423217d9, 2026-03-05: fp32 1e-4,
# fp16 and bf16 1e-2, after torchbench); KernelBench has none for f64. A task's own
# [tolerance] table overrides them.
TOLERANCE = {"f32": 1e-4, "f64": 1e-9, "f16": 1e-2, "bf16": 1e-2}
# Tasks extracted from a workload (kope deploy profile): KernelBench's, but never under two units
# in the last place of the output's dtype (relative: 2 * 2^-7 for bf16). A unit recomputed in
# another process, whose libraries pick other kernels, differs from itself by that much; what the
# deployment needs is judged in the model (the accuracy gate).
ULP = {"f32": 2.0 ** -23, "f64": 2.0 ** -52, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
WORKLOAD_TOLERANCE = {d: max(t, 2 * ULP[d]) for d, t in TOLERANCE.items()}
CHECK_ELEMENTS = 1 << 22  # at most this many elements in all tensors of a check set
CPU_BENCH_BYTES = 48 << 20  # the CPU bench set moves at most this much

FAMILIES = [  # (pattern in the file name, family), first match wins
    (r"conv", "conv"), (r"matmul|gemm|matrix|bmm|linear|einsum", "matmul"),
    (r"attention|sdpa", "attention"), (r"log_?softmax|softmax", "softmax"),
    (r"norm", "norm"), (r"pool", "pooling"), (r"cumsum|cumprod|scan", "scan"),
    (r"loss|divergence|hinge", "loss"),
    # Short words only whole: "MinGPTNewGelu" is a GELU, not a min.
    (r"argmax|argmin|(?<![a-z])(sum|mean|max|min|prod)(?![a-z])|reduction", "reduction"),
    (r"relu|gelu|sigmoid|tanh|swish|selu|elu|softplus|softsign|hardtanh|hardsigmoid|dropout|"
     r"activation", "elementwise"),
]


class ImportError_(Exception):
    pass


def family_of(name, source):
    key = name.lower()
    for pattern, family in FAMILIES:
        if re.search(pattern, key):
            return family
    for pattern, family in FAMILIES:  # then the operations the file calls
        if re.search(pattern, source.lower()):
            return family
    return "other"


def identifier(name, taken):
    base = re.sub(r"\W", "_", name).strip("_") or "t"
    if base[0].isdigit():
        base = "t" + base
    out, k = base, 2
    while out in taken:
        out, k = f"{base}_{k}", k + 1
    taken.add(out)
    return out


def describe(source, name, globals_):
    """The problem's tensors at `globals_`, from a run on PyTorch's meta device, or where the
    model's shapes depend on its data (an MoE's routing: no meta implementation), on the CPU."""
    module = problem.load_module(source, name, globals_)
    try:
        return problem.describe(module)
    except NotImplementedError:
        return problem.describe(module, device="cpu")


def try_describe(source, name, globals_):
    try:
        return describe(source, name, globals_)
    except Exception:  # a size set the model does not accept: skipped
        return None


def tensors(d):
    return d["inputs"] + d["parameters"] + d["outputs"]


def empty(d):
    """Whether some tensor has a zero extent (a convolution shrunk below its kernel)."""
    return any(0 in t["shape"] for t in tensors(d))


def elements(d):
    return sum(math.prod(t["shape"]) for t in tensors(d))


def nbytes(d):
    return sum(math.prod(t["shape"]) * KOPE_DTYPES.get(t["dtype"], ("", 4))[1] for t in tensors(d))


def shrunk(globals_, rule):
    return {k: rule(k, v) for k, v in globals_.items()}


def check_sets(source, name, globals_):
    """Up to three small size sets the model accepts: odd sizes, powers of two, batch 1."""
    rules = [
        lambda k, v: 17 + 2 * (v % 3) if v > 24 else v,
        lambda k, v: 32 if v > 32 else v,
        lambda k, v: 1 if "batch" in k.lower() else (8 if v > 8 else v),
        lambda k, v: 1 if "batch" in k.lower() else (4 if v > 4 else v),
    ]
    found = []
    for rule in rules:
        g = shrunk(globals_, rule)
        if g in [f[0] for f in found]:
            continue
        d = try_describe(source, name, g)
        if d is not None and elements(d) <= CHECK_ELEMENTS and not empty(d):
            found.append((g, d))
        if len(found) == 3:
            break
    # kope verifies at least one size of 1 (edge handling): set one size to 1 where the model
    # accepts it, the largest first.
    if found and not any(1 in g.values() for g, _ in found):
        base = found[-1][0]
        for key in sorted(base, key=lambda k: -base[k]):
            g = dict(base, **{key: 1})
            d = try_describe(source, name, g)
            if d is not None and not empty(d):
                found.append((g, d))
                break
    return found


def cpu_bench_set(source, name, globals_, bench):
    """The file's sizes, halved (largest first) until one call moves at most CPU_BENCH_BYTES."""
    g, d = dict(globals_), bench
    for _ in range(200):
        if nbytes(d) <= CPU_BENCH_BYTES:
            return g, d
        for key in sorted(g, key=lambda k: -g[k]):
            if g[key] <= 1:
                continue
            trial = dict(g, **{key: g[key] // 2})
            td = try_describe(source, name, trial)
            if td is not None and not empty(td):
                g, d = trial, td
                break
        else:
            return None
    return None


def dependencies(source, globals_, bench):
    """For each size, the (kind, index, axis) dimensions that change when it alone changes."""
    follows = {}
    for g, v in globals_.items():
        d = try_describe(source, "problem.py", dict(globals_, **{g: v + 1}))
        if d is None:
            continue
        follows[g] = {(kind, i, axis) for kind in ("inputs", "parameters", "outputs")
                      for i, t in enumerate(bench[kind])
                      for axis, n in enumerate(t["shape"] or [1])
                      if (d[kind][i]["shape"] or [1])[axis] != n}
    return follows


def toml_value(v):
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return str(v)


def import_problem(path, out_dir, workload_sets=None, task_name=None, description=None,
                   family=None, captured_inputs=None, tolerance=TOLERANCE):
    """Writes the task folder `out_dir` for the problem file `path`. `workload_sets` (optional):
    [(label, sizes)] of the problem's integers at which a workload runs it; each becomes a check
    set at those exact sizes, after the shrunk ones (the file's own values stay the bench set).
    `task_name`, `description` and `family` replace what the file's name and source give;
    `captured_inputs`, a safetensors file of the task folder with inputs captured where the
    problem runs (verification adds a trial on them, docs/TASK_FORMAT.md); `tolerance`: rtol =
    atol by output dtype."""
    source, name, globals_, bench = read_problem(path)
    sets, checks, note = size_sets(source, globals_, bench, workload_sets or [])
    taken = set(globals_)
    roles = tensor_roles(source, globals_, bench, taken)
    shapes, derived = symbolic_shapes(source, globals_, bench, roles, sets, taken)
    family = family or family_of(name, source)
    head = [f'name = {toml_value(task_name or "kb_" + re.sub(r"[^A-Za-z0-9_]", "_", name))}',
            f"family = {toml_value(family)}",
            f"description = {toml_value(description or 'KernelBench problem ' + os.path.basename(path))}"]
    if captured_inputs:
        head.append(f"captured_inputs = {toml_value(captured_inputs)}")
    head.append("")
    tensor_lines, kope_dtype, scalars = tensor_tables(
        path, source, globals_, bench, roles, shapes, sets, checks, family)
    lines = head + tensor_lines + sizes_table(sets, derived) + \
        trailer_tables(globals_, bench, roles, shapes, kope_dtype, scalars, tolerance)
    if note:
        lines.insert(3, f"# {note}")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "task.toml"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out_dir, "problem.py"), "w") as f:
        f.write(source)
    return {"problem": path, "task": out_dir, "sets": len(sets), "note": note}


def read_problem(path):
    """The file's source, name, integers and the tensors at its own sizes (meta device)."""
    with open(path) as f:
        source = f.read()
    name = os.path.splitext(os.path.basename(path))[0]
    globals_ = problem.int_globals(source)
    try:
        bench = describe(source, "problem.py", globals_)
    except Exception as e:
        raise ImportError_(f"{path}: the model does not run on PyTorch's meta device nor the CPU: "
                           f"{type(e).__name__}: {e}")
    for t in tensors(bench):
        if t["dtype"] not in KOPE_DTYPES:
            raise ImportError_(f"{path}: dtype {t['dtype']} is not one kope supports")
    return source, name, globals_, bench


def size_sets(source, globals_, bench, workload_sets):
    """[(label, integers, described tensors)]: bench, the CPU bench set where it differs, the
    shrunk check sets, then the workload's sets (labelled `workload:<label>`); also the shrunk
    checks and a note for task.toml."""
    checks = check_sets(source, "problem.py", globals_)
    note = ""
    if not checks:
        checks = [(globals_, bench)]
        note = "no smaller sizes run: the file's sizes are the only check set"
    cpu = cpu_bench_set(source, "problem.py", globals_, bench)
    sets = [("bench", globals_, bench)]
    if cpu is not None and cpu[0] != globals_:
        sets.append(("bench_cpp", cpu[0], cpu[1]))
    sets += [(f"check[{i}]", g, d) for i, (g, d) in enumerate(checks)]
    for label, sizes in workload_sets:
        g = dict(globals_, **sizes)
        if any(g == s[1] for s in sets[1:]):
            continue
        d = try_describe(source, "problem.py", g)
        if d is None:
            raise ImportError_(f"workload size set {label} ({sizes}) does not run")
        sets.append((f"workload:{label}", g, d))
    return sets, checks, note


def tensor_roles(source, globals_, bench, taken):
    """(kind, display name, index into the described lists): forward's parameter names, then
    the module's parameters, then the outputs."""
    module = problem.load_module(source, "problem.py", globals_)
    arg_names = list(inspect.signature(module.Model.forward).parameters)[1:]
    roles = []
    for i in range(len(bench["inputs"])):
        raw = arg_names[i] if i < len(arg_names) and not arg_names[i].startswith("*") else f"x{i}"
        roles.append(("inputs", identifier(raw, taken), i))
    for i, prm in enumerate(bench["parameters"]):
        roles.append(("parameters", identifier(prm["name"], taken), i))
    for i in range(len(bench["outputs"])):
        roles.append(("outputs", identifier("out" if len(bench["outputs"]) == 1 else f"out{i}",
                                            taken), i))
    return roles


def symbolic_shapes(source, globals_, bench, roles, sets, taken):
    """Each tensor's dimensions: a size name where one matches in every set, a number where it
    never changes, else a derived size of its own ({name: [value per set]})."""
    follows = dependencies(source, globals_, bench)
    derived, shapes = {}, {}
    for kind, tname, i in roles:
        dims = []
        for axis, value in enumerate(bench[kind][i]["shape"] or [1]):
            per_set = [(d[kind][i]["shape"] or [1])[axis] for _, _, d in sets]
            match = [g for g in globals_ if all(gl[g] == v for (_, gl, _), v in zip(sets, per_set))]
            # Several sizes with equal values (depth == width == height): prefer the one the
            # dimension actually follows.
            match.sort(key=lambda g: (kind, i, axis) not in follows.get(g, ()))
            if match and len(set(per_set)) == 1 and \
                    all(g in follows and (kind, i, axis) not in follows[g] for g in match):
                # A constant that equals sizes but follows none of them (a depthwise weight's 1
                # is no stride, a kernel's 3 no channel count): the number itself.
                dims.append(per_set[0])
            elif match:
                dims.append(match[0])
            elif len(set(per_set)) == 1:
                dims.append(per_set[0])
            else:
                dname = identifier(f"{tname}_d{axis}", taken)
                derived[dname] = per_set
                dims.append(dname)
        shapes[(kind, i)] = dims
    return shapes, derived


def tensor_tables(path, source, globals_, bench, roles, shapes, sets, checks, family):
    """The [[inputs]] and [[outputs]] tables (parameters are inputs), with each input's value
    distribution measured on a small real instance; the kope dtypes; the scalar inputs."""
    inputs, params, model = measure_values(source, "problem.py", checks[-1][0])
    param_names = [p["name"] for p in bench["parameters"]]
    scaled = fan_in_distributions(model, param_names,
                                  [shapes[("parameters", i)] for i in range(len(param_names))])
    ints = {}  # integer inputs' ranges (draws cost time: only where there are some)
    if any(t["dtype"] in ("int32", "int64") and not t.get("scalar") for t in bench["inputs"]):
        ints = integer_ranges(source, "problem.py", [g for g, _ in checks])
    lines, kope_dtype, scalars = [], {}, []
    for kind, tname, i in roles:
        dt = KOPE_DTYPES[bench[kind][i]["dtype"]][0]
        kope_dtype[(kind, i)] = dt
        lines.append("[[outputs]]" if kind == "outputs" else "[[inputs]]")
        lines += [f"name = {toml_value(tname)}", f"dtype = {toml_value(dt)}",
                  f"shape = {toml_value(shapes[(kind, i)])}"]
        if kind != "outputs":
            values = inputs[i] if kind == "inputs" else params[i]
            if kind == "inputs" and bench["inputs"][i].get("scalar"):  # a Python number
                scalars.append(tname)
                dist = [scalar_distribution(values)]
            elif not isinstance(values, torch.Tensor):
                raise ImportError_(f"{path}: input {i} of forward is not a tensor")
            elif kind == "inputs" and i in ints:
                dist = [{"kind": "uniform", "low": ints[i][0], "high": ints[i][1] + 1}]
            elif kind == "parameters" and scaled[i] is not None:
                dist = [scaled[i]]
            else:
                dist = input_distributions(values, family if kind == "inputs" else None)
            lines.append(f"distribution = {toml_value(dist if len(dist) > 1 else dist[0])}")
        lines.append("")
    return lines, kope_dtype, scalars


def sizes_table(sets, derived):
    """[sizes]: bench, bench_cpp where there is one, then every check set (a workload's set
    with a comment naming it)."""
    def size_table(k):
        _, g, _ = sets[k]
        return dict(g, **{n: v[k] for n, v in derived.items()})
    lines = ["[sizes]", f"bench = {toml_value(size_table(0))}"]
    k0 = 1
    if len(sets) > 1 and sets[1][0] == "bench_cpp":
        lines.append(f"bench_cpp = {toml_value(size_table(1))}")
        k0 = 2
    lines.append("check = [")
    for k in range(k0, len(sets)):
        label = sets[k][0]
        comment = f"  # {label[len('workload:'):]}" if label.startswith("workload:") else ""
        lines.append(f"  {toml_value(size_table(k))},{comment}")
    return lines + ["]", ""]


def trailer_tables(globals_, bench, roles, shapes, kope_dtype, scalars, tolerance):
    """[tolerance] (by the outputs' dtype), [baseline], [torch] and [roofline]."""
    lines = []
    out_dt = {kope_dtype[("outputs", i)] for i in range(len(bench["outputs"]))}
    tol = max(tolerance.get(d, 0) for d in out_dt)
    if tol:
        lines += ["[tolerance]", f"rtol = {tol!r}", f"atol = {tol!r}", ""]
    lines += ["[baseline]", 'torch = "problem.py"', ""]
    lines += ["[torch]", f"globals = {toml_value(list(globals_))}",
              f"parameters = {toml_value([p['name'] for p in bench['parameters']])}"]
    if scalars:
        lines.append(f"scalars = {toml_value(scalars)}")
    lines += ['ops = "allow"', ""]
    terms = []
    for kind, tname, i in roles:
        size = KOPE_DTYPES[bench[kind][i]["dtype"]][1]
        terms.append(" * ".join([str(size)] + [str(d) for d in shapes[(kind, i)]]))
    lines += ["[roofline]", f"bytes = {toml_value(' + '.join(terms))}", ""]
    return lines


def parse_args(argv):
    """PROBLEM.py OUT_DIR, and the rlimits kope-runner takes (kope runs the importer in the
    sandbox of a PyTorch candidate's runner: src/torch_bridge/bridge.cc)."""
    ap = argparse.ArgumentParser(prog="kope_bridge.importer")
    ap.add_argument("problem")
    ap.add_argument("out_dir")
    for limit in ("cpu-seconds", "max-file-bytes", "max-address-space-bytes", "max-processes",
                  "max-data-bytes"):
        ap.add_argument("--" + limit, type=int, default=0)
    return ap.parse_args(argv)


def main(argv):
    """python3 -m kope_bridge.importer [LIMITS] PROBLEM.py OUT_DIR   (prints one JSON line)"""
    args = parse_args(argv)
    # The environment is kope's own list, nothing of the parent's (the bridge's server does the
    # same): the user name that PyTorch asks for has no entry in the sandbox's /etc.
    os.environ.setdefault("USER", "kope")
    apply_limits(args)  # before the problem's code runs: what it does counts against them
    try:
        print(json.dumps(import_problem(args.problem, args.out_dir)))
    except ImportError_ as e:
        print(str(e), file=sys.stderr)
        return 1
    except Exception as e:
        print(f"{args.problem}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
