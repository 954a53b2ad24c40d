"""The patch artifact: a Python package `kope_patch_<model>` that installs validated kernels on a
user's own model with nothing but torch. It holds each kernel's file with its SHA-256 (a ModelNew
`.py`, or a native kernel's compiled shared object, its source beside it), the
patches' dispatch keys (patches.json; a runtime patch, decode_graph.py with merge_linear.py, by
its options), the validation report with its provenance (report.json), kope's patch runtime
(patch_runtime.py), and `apply(model)` / `remove(model)`. kope's files are carried as they are,
under their own names, each hashed. A file that changed since it was validated is refused when
applied, before any of kope's files runs."""
import hashlib
import json
import os
import re
import shutil

FORMAT = "kope-patch-1"
RUNTIME_FILES = ("decode_graph.py", "merge_linear.py", "patch_runtime.py")  # kope's, as they are

LOADER = '''"""kope patches for {model}: `apply(model)` installs the validated kernels on the model (every
module they were validated for, at the shapes they were validated at; other calls run the
module's own forward); `remove(model)` restores it. Needs torch only. Validation: report.json."""
import hashlib
import importlib
import json
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_active = {{}}


def _check(entry):
    path = os.path.join(_HERE, entry["file"])
    with open(path, "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != entry["sha256"]:
            raise ValueError(f"{{path}}: changed since it was validated")


def patches():
    """The package's patches, each file checked against its recorded hash before it runs."""
    with open(os.path.join(_HERE, "patches.json")) as f:
        spec = json.load(f)
    for entry in spec["runtime"]:
        _check(entry)
    decode_graph = importlib.import_module(".decode_graph", __name__)
    runtime = importlib.import_module(".patch_runtime", __name__)
    out = []
    for p in spec["patches"]:
        if p["kind"] == "runtime":  # how the model runs: decode_graph.py, checked above
            out.append(decode_graph.DecodeGraph(**p["options"]))
            continue
        path = os.path.join(_HERE, p["file"])
        _check(p)
        keys = {{tuple((tuple(shape), runtime.DTYPES[dtype]) for shape, dtype in key): label
                for label, key in p["keys"]}}
        if p.get("kind", "modelnew") == "native":
            outputs = {{label: [(shape, runtime.DTYPES[dtype]) for shape, dtype in outs]
                       for label, outs in p["outputs"].items()}}
            kernel = runtime.NativeKernel(path, p["name"], outputs)
        else:
            kernel = runtime.load_kernel(path, p["name"])
        out.append(runtime.KernelPatch(p["name"], kernel, p["module_type"], p["pattern"],
                                       p["parameters"], keys))
    return out


def apply(model):
    """Installs every patch on `model` (once); the patches, with their engagement counts."""
    if id(model) not in _active:
        installed = []
        try:
            for p in patches():
                p.apply(model)
                installed.append(p)
        except Exception:
            for p in reversed(installed):
                p.remove()
            raise
        _active[id(model)] = installed
    return _active[id(model)]


def remove(model):
    for p in reversed(_active.pop(id(model), [])):  # the last installed first
        p.remove()
'''


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def package_name(model_name):
    return "kope_patch_" + (re.sub(r"[^a-z0-9]+", "_", model_name.lower()).strip("_") or "model")


def _write_kernel(folder, p):
    """Writes one patch's kernel file(s) under folder/kernels; its patches.json entry."""
    if p.kind == "runtime":  # its code is the package's decode_graph.py, hashed with kope's files
        return {"name": p.name, "kind": "runtime", "file": "decode_graph.py",
                "options": {"max_cache_len": p.max_cache_len, "loop": p.loop, "fuse": p.fuse,
                            "fuse_prefill": p.fuse_prefill}}
    source = p.source.encode()
    entry = {"name": p.name, "kind": p.kind, "module_type": p.module_type, "pattern": p.pattern,
             "parameters": p.parameters, "keys": p.signatures,
             "candidate": os.path.basename(p.candidate_path)}
    if p.kind == "native":
        suffix = os.path.splitext(p.candidate_path)[1] or ".cc"
        with open(os.path.join(folder, f"kernels/{p.name}{suffix}"), "wb") as f:
            f.write(source)
        with open(p.compiled, "rb") as f:
            data = f.read()
        entry.update(file=f"kernels/{p.name}.so", source=f"kernels/{p.name}{suffix}",
                     source_sha256=hashlib.sha256(source).hexdigest(),
                     outputs=p.output_signatures)
    else:
        data = source
        entry["file"] = f"kernels/{p.name}.py"
    with open(os.path.join(folder, entry["file"]), "wb") as f:
        f.write(data)
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    return entry


def write(out, model_name, patches, report, provenance):
    """Writes the package under `out` (replaced whole); its folder."""
    folder = os.path.join(out, package_name(model_name))
    partial = folder + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(os.path.join(partial, "kernels"))
    here = os.path.dirname(__file__)
    for name in RUNTIME_FILES:
        shutil.copy(os.path.join(here, name), os.path.join(partial, name))
    entries = []
    for p in patches:
        entries.append(_write_kernel(partial, p))
    with open(os.path.join(partial, "patches.json"), "w") as f:
        json.dump({"format": FORMAT, "model": model_name, "patches": entries,
                   "runtime": [{"file": name, "sha256": _sha256(os.path.join(partial, name))}
                               for name in RUNTIME_FILES]}, f, indent=1)
    with open(os.path.join(partial, "report.json"), "w") as f:
        json.dump({"format": FORMAT, "provenance": provenance, "validation": report}, f,
                  indent=1)
    with open(os.path.join(partial, "__init__.py"), "w") as f:
        f.write(LOADER.format(model=model_name))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(partial, folder)
    return folder
