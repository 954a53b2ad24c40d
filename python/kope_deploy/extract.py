"""Task folders for the top opportunities: a KernelBench-form problem file (templates.py) at the
workload's exact sizes, turned into a kope task folder by the importer, plus
activations.safetensors: inputs of the unit captured from the workload's first layer."""
import json
import os
import re
import tempfile

import torch

from kope_bridge import importer

from . import templates
from .attribution import ROOT
from .ranking import LINEAR_OPS, pattern

UNIT_FORMAT = "kope-unit-1"
ACTIVATIONS = "activations.safetensors"  # the unit's inputs as the workload gave them
# The units a patch replaces whole (patching.py), with the prefix of the problem's parameter
# names before the module's own (`module.gate_proj.weight` is the MLP's `gate_proj.weight`).
# unit.json says whether its unit is one of them (`patchable`): what `kope deploy` optimizes.
PATCHED_UNITS = {"norm": "", "linear": "proj.", "mlp": "module.", "moe": "module.",
                 "experts": "module."}


def capture_paths(module):
    """The modules whose inputs and outputs are kept while profiling: the first instance of
    every module (paths whose layer indices are all 0), and the pseudo-modules inside them."""
    out = set()
    for path, _ in module.named_modules():
        path = path or ROOT
        if all(i == "0" for i in re.findall(r"\.(\d+)(?=\.|$)", path)):
            out.update({path, f"{path}.rotary", f"{path}.attention_core"})
    return out


def _first(types, regex):
    paths = sorted((p for p, t in types.items() if re.search(regex, t)),
                   key=lambda p: (len(re.findall(r"\d+", p)), p))
    return paths[0] if paths else None


def _tensor_args(call):
    """The tensor shapes (or tensors) among a call's positional then keyword arguments."""
    args, kwargs = call
    values = list(args) + [v for k, v in kwargs.items() if k in ("hidden_states",)]
    return [v for v in values if isinstance(v, torch.Tensor) or
            (isinstance(v, list) and v and all(isinstance(x, int) for x in v))]


def plan(o, model, types):
    """(template kind, instance path, constants) for an opportunity, or (None, reason)."""
    dtype = templates.DTYPE_NAMES.get(o.get("dtype", "bf16"), "torch.bfloat16")
    config = getattr(model, "config", None)
    if o["grain"] == "op":
        path = (o["module"] or "").replace("*", "0")
        if o["op"] in LINEAR_OPS and re.search(r"Linear$", o["module_type"] or ""):
            layer = model.get_submodule(path) if path != ROOT else model
            return "linear", path, {"BIAS": layer.bias is not None, "DTYPE": dtype}
        return None, "only linear operators are extracted at the op grain (their subgraph is)"
    kind = o["kind"]
    if kind == "norm" and re.search(r"RMSNorm$", o["module_type"]):
        path = _first(types, "^" + o["module_type"] + "$")
    elif kind == "add_norm":
        path = _first(types, r"DecoderLayer$")
    elif kind == "act_mul":
        path = _first(types, r"MLP$")
        act = templates.ACTS.get(getattr(config, "hidden_act", "silu"))
        if act is None or path is None:
            return None, "unknown activation"
        return "act_mul", path, {"ACT": act, "DTYPE": dtype}
    elif kind == "experts":
        return _plan_experts(o, model, types, dtype, config)
    elif kind in ("layer", "attention_module"):
        return _plan_step(o, model, types, dtype, config)
    elif kind in ("rotary", "attention", "mlp", "moe"):
        path = _first(types, "^" + o["module_type"] + "$")
    else:
        return None, f"a {kind} subgraph needs its cache and masks: not extracted yet"
    if path is None:
        return None, "no instance found"
    constants = {"DTYPE": dtype}
    if kind in ("norm", "add_norm"):
        norm = model.get_submodule(path if kind == "norm" else
                                   f"{path}.post_attention_layernorm")
        eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
        constants["EPS"] = float(eps if eps is not None else torch.finfo(torch.float32).eps)
    if kind == "attention":
        owner = model.get_submodule(path.rpartition(".")[0])
        scaling = getattr(owner, "scaling", None)
        constants["SCALE"] = repr(float(scaling)) if scaling is not None else "None"
    if kind in ("mlp", "moe") and (config is None or not
                                   type(model.get_submodule(path)).__module__.startswith(
                                       "transformers.")):
        return None, "only a transformers module rebuilds from its model's config"
    if kind in ("mlp", "moe"):
        module = model.get_submodule(path)
        kwargs = {}
        size = getattr(module, "intermediate_size", None)
        if isinstance(size, int) and size != getattr(config, "intermediate_size", size):
            kwargs["intermediate_size"] = size  # a shared expert's own width
        if not _rebuilds(type(module), config, kwargs, module):
            return None, f"{type(module).__name__} does not rebuild from the model's config"
        constants.update(_module_constants(module, config), MODULE_KWARGS=repr(kwargs))
    return kind, path, constants


def _module_constants(module, config):
    """The MODULE template's constants: the config's fields and where the class lives."""
    diff = config.to_diff_dict()
    for k in ("architectures", "transformers_version", "dtype", "torch_dtype",
              "_attn_implementation_autoset"):
        diff.pop(k, None)
    return {"CONFIG_CLASS": repr(type(config).__name__), "CONFIG": repr(diff),
            "MODULE_PATH": repr(type(module).__module__),
            "MODULE_CLASS": repr(type(module).__name__)}


def _plan_experts(o, model, types, dtype, config):
    """An experts module, given the router's choices (indices and weights) as inputs."""
    path = _first(types, "^" + o["module_type"] + "$")
    if path is None or config is None:
        return None, "no instance or config found"
    module = model.get_submodule(path)
    experts = getattr(module, "num_experts", None)
    k = getattr(config, "num_experts_per_tok", None)
    if not type(module).__module__.startswith("transformers.") or experts is None or k is None \
            or not _rebuilds(type(module), config, {}, module):
        return None, f"{type(module).__name__} does not rebuild from the model's config"
    return "experts", path, {"DTYPE": dtype, **_module_constants(module, config),
                             "MODULE_KWARGS": repr({}),
                             "ROUTING": repr((experts, k))}  # (experts, chosen per token)


def _plan_step(o, model, types, dtype, config):
    """A decoder layer or attention module at its main phase: its prefill over the prompt, or
    one decode step over a KV cache (the two take different inputs: one task each)."""
    path = _first(types, "^" + o["module_type"] + "$")
    rotary = _first(types, r"RotaryEmbedding$")
    if path is None or rotary is None or config is None:
        return None, "no instance, rotary embedding or config found"
    module = model.get_submodule(path)
    if not type(module).__module__.startswith("transformers.") or \
            not _rebuilds(type(module), config, {"layer_idx": 0}, module):
        return None, f"{type(module).__name__} does not rebuild from the model's config"
    phase = o["phases"][0]
    heads = config.num_attention_heads
    constants = {"DTYPE": dtype, **_module_constants(module, config),
                 "ROTARY_CLASS": repr(type(model.get_submodule(rotary)).__name__),
                 "ATTENTION": repr(getattr(config, "_attn_implementation", None) or "sdpa"),
                 "KV_SHAPE": repr((  # (heads, dim): a tuple, as the file's integers are its sizes
                     getattr(config, "num_key_value_heads", None) or heads,
                     getattr(config, "head_dim", None) or config.hidden_size // heads))}
    return f"step_{phase}", path, constants


def _rebuilds(cls, config, kwargs, instance):
    """Whether cls(config, **kwargs) has the instance's parameters (names and shapes)."""
    try:
        with torch.device("meta"):
            rebuilt = cls(config, **kwargs)
    except Exception:
        return False
    def shapes(m):
        return {n: tuple(p.shape) for n, p in m.named_parameters()}
    return shapes(rebuilt) == shapes(instance)


def sizes(kind, path, model, call, request=None):
    """The template's integers at one call's shapes (None where the call does not fit); a
    decode step's cache holds the prompt and half the decode steps (its mean length)."""
    shapes = [list(s.shape) if isinstance(s, torch.Tensor) else s for s in _tensor_args(call)]
    try:
        if kind == "step_decode":
            return {"batch_size": shapes[0][0],
                    "past_len": request["prompt"] + request["decode"] // 2}
        if kind == "attention":
            q, k = shapes[0], shapes[1]
            return {"batch_size": q[0], "num_heads": q[1], "num_kv_heads": k[1], "q_len": q[2],
                    "kv_len": k[2], "head_dim": q[3]}
        if kind == "rotary":
            q, k = shapes[0], shapes[1]
            return {"batch_size": q[0], "num_heads": q[1], "num_kv_heads": k[1],
                    "seq_len": q[2], "head_dim": q[3]}
        if kind == "experts":
            return {"tokens": shapes[0][0]}
        if len(shapes[0]) == 2:  # tokens flattened (an MoE block's experts)
            shapes[0] = [shapes[0][0], 1, shapes[0][1]]
        b, s, h = shapes[0]
        if kind == "linear":
            layer = model.get_submodule(path)
            return {"batch_size": b, "seq_len": s, "in_features": layer.in_features,
                    "out_features": layer.out_features}
        if kind == "act_mul":
            return {"batch_size": b, "seq_len": s,
                    "intermediate_size": model.get_submodule(f"{path}.up_proj").out_features}
        if kind in ("mlp", "moe", "step_prefill"):
            return {"batch_size": b, "seq_len": s}
        return {"batch_size": b, "seq_len": s, "hidden_size": h}
    except (IndexError, ValueError, TypeError, AttributeError):
        return None


def activations(kind, path, captures, phase):
    """{input name: tensor} captured at `phase` for the template's inputs, or {}."""
    def got(p):
        return captures.get((phase, p))
    try:
        if kind == "add_norm":
            residual = _tensor_args(got(path)[:2])[0]
            attn = got(f"{path}.self_attn")[2]
            return {"residual": residual, "hidden_states": attn[0] if isinstance(
                attn, (tuple, list)) else attn}
        if kind == "act_mul":
            return {"gate": got(f"{path}.gate_proj")[2], "up": got(f"{path}.up_proj")[2]}
        values = _tensor_args(got(path)[:2])
        names = templates.inputs_of(kind)
        if kind in ("norm", "linear", "mlp", "moe") and values and values[0].dim() == 2:
            values[0] = values[0].unsqueeze(1)  # tokens flattened: as [tokens, 1, hidden]
        return dict(zip(names, values[:len(names)]))
    except (TypeError, IndexError, KeyError):
        return {}


def write_tasks(model, workload, entries, opportunities, out, top, wrote=None):
    """Writes up to `top` task folders, best first; sets each opportunity's task (or null) and,
    where none could be written, a note saying why."""
    module = model.module
    written = 0
    for o in opportunities:
        o["dtype"] = workload["run"]["dtype"]
        o["task"] = None
        if written >= top:
            continue
        try:
            note = _write_task(module, workload, entries, o, out)
        except Exception as e:  # the unit's problem does not import: ranked, not extracted
            note = f"{type(e).__name__}: {e}"
        if note:
            o["note"] = note
        else:
            written += 1
            if wrote:
                wrote(written, o["name"])
    for o in opportunities:
        o.pop("dtype", None)


def _write_task(module, workload, entries, o, out):
    first = entries[0]
    planned = plan(o, module, first["types"])
    if planned[0] is None:
        return planned[1]
    kind, path, constants = planned
    sets = []  # (label, weight, integers)
    for e in entries:
        for ph in _phases(kind):
            call = e["calls"].get((ph, path))
            s = sizes(kind, path, module, call, e["request"]) if call else None
            if s is not None:
                label = f"entry {e['entry']} {ph}"
                w = o["size_sets"].get(f"entry{e['entry']}_{ph}", {}).get("weight", 0.0)
                sets.append((label, w, s))
    if not sets:
        return "no call of the unit seen in the profile"
    # The bench set is of the unit's main phase (the one its name ends with), the one with most
    # of the traffic's tokens there rather than of its measured time: the same workload gives
    # the same task on every profile, however the timings vary.
    tokens = {f"entry {e['entry']} {ph}": e["weight"] * e["request"]["batch"] *
              e["request"]["prompt" if ph == "prefill" else "decode"]
              for e in entries for ph in ("prefill", "decode")}
    sets.sort(key=lambda s: (not s[0].endswith(o["phases"][0]), -tokens[s[0]], s[0]))
    folder = os.path.join(out, "tasks", o["name"])
    # A subgraph unit is every module of its type; an operator's, its place in every layer.
    where = pattern(path) if o["grain"] == "op" else None
    write_unit_task(folder, o["name"], (kind, path, constants), [(l, s) for l, _, s in sets],
                    (o["module_type"], where), workload["name"],
                    templates.FAMILIES.get(o["kind"], templates.FAMILIES[kind]), ACTIVATIONS)
    _write_activations(kind, path, entries, folder)
    o["task_sets"] = [{"label": l, "weight": w, "sizes": s} for l, w, s in sets]
    o["task"] = f"tasks/{o['name']}"
    return None


def write_unit_task(folder, name, planned, sets, match, workload_name, family, captured=None):
    """The task folder of one unit: its KernelBench-form problem at `sets` (label, integers;
    the first is the bench set) imported as a task, and unit.json, which says which modules of
    the model the unit is (`match`: their type, and a path pattern or None for every module of
    the type): what a patch replaces (patching.py). `captured`: the safetensors file of the
    folder with the unit's inputs captured in the workload, which verification also uses."""
    kind, path, constants = planned
    module_type, paths = match
    where = f"{module_type} at {path}" if path else module_type
    # The file holds no measured figure (its rank and share are profile.json's): the same unit
    # of the same workload is the same task on every profile.
    source = templates.source(kind, sets[0][1], constants, f"{name}: {where}", workload_name,
                              "its rank and share of the time are in profile.json")
    with tempfile.TemporaryDirectory() as tmp:
        problem = os.path.join(tmp, f"{name}.py")
        with open(problem, "w") as f:
            f.write(source)
        importer.import_problem(problem, folder, sets, task_name=name,
                                description=f"{where} in workload {workload_name}",
                                family=family, captured_inputs=captured,
                                tolerance=importer.WORKLOAD_TOLERANCE)
    unit = {"format": UNIT_FORMAT, "kind": kind, "module_type": module_type, "path": path,
            "pattern": paths, "patchable": kind in PATCHED_UNITS}
    with open(os.path.join(folder, "unit.json"), "w") as f:
        json.dump(unit, f, indent=1)


def _phases(kind):
    """The phases whose calls a template's size sets come from."""
    return (kind[len("step_"):],) if kind.startswith("step_") else ("prefill", "decode")


def _write_activations(kind, path, entries, folder):
    from safetensors.torch import save_file
    tensors = {}
    for e in entries:
        for ph in _phases(kind):
            for name, t in activations(kind, path, e["captures"], ph).items():
                if isinstance(t, torch.Tensor):
                    tensors[f"entry{e['entry']}.{ph}.{name}"] = t.contiguous()
    save_file(tensors, os.path.join(folder, ACTIVATIONS),
              metadata={"format": "kope-activations-1", "path": path, "kind": kind})
