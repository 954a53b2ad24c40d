"""Phases weighted by the request mix, and optimization opportunities ranked at two grains.

For one request entry and phase, a unit (an operator, or a module subgraph) costs per step
    time = device time + (wall - busy) * host time / host time of the phase,
its GPU time plus its part of the time the GPU waits on the host (distributed by the host time its
calls take), so that a phase's units add up to its wall time. A unit's share is its time over the
workload's (each entry weighted by its share of traffic, each phase by its steps); its headroom
is 1 - floor / time against its roofline floor; score = share * headroom, the part of the
workload's time it would give back at its floor; its Amdahl ceiling 1 / (1 - share).
"""
import math
import re

from . import roofline

# Module types that make a subgraph of their own: (pattern on the type name, kind).
SUBGRAPH_TYPES = [
    (r"RMSNorm$|LayerNorm$", "norm"), (r"MLP$", "mlp"), (r"SparseMoeBlock$|MoeBlock$", "moe"),
    (r"Experts$", "experts"), (r"^RotaryApply$", "rotary"), (r"^AttentionCore$", "attention"),
    (r"Attention$", "attention_module"), (r"DecoderLayer$", "layer"),
]
LINEAR_OPS = ("aten::linear", "aten::mm", "aten::addmm", "aten::matmul", "aten::bmm")


def weigh_phases(entries):
    """profile.json's phases and weighted, and the workload's time per request (ms)."""
    total = sum(e["weight"] * sum(ms for _, ms in e["timing"].values()) for e in entries)
    phases, busy_w, shares = [], 0.0, {"prefill": 0.0, "decode": 0.0}
    for e in entries:
        for name in ("prefill", "decode"):
            if name not in e["timing"]:
                continue
            steps, wall = e["timing"][name]
            busy = e["ranges"].get(name, {}).get("device_us", 0.0) / 1e3 / e["profiled"][name]
            step_wall = wall / max(steps, 1)
            weight = e["weight"] * wall / total if total else 0.0
            idle = max(0.0, 1.0 - busy / step_wall) if step_wall else 0.0
            phases.append({"entry": e["entry"], "phase": name, "weight": weight,
                           "wall_ms": step_wall, "gpu_busy_ms": min(busy, step_wall),
                           "idle_fraction": idle, "steps": steps,
                           "profiled_steps": e["profiled"][name]})
            shares[name] += weight
            busy_w += weight * idle
    return phases, {"prefill_share": shares["prefill"], "decode_share": shares["decode"],
                    "gpu_idle_fraction": busy_w}, total


def pattern(path):
    return re.sub(r"\.\d+(?=\.|$)", ".*", path)


def units_of(row, types):
    """The units a profile row belongs to: (grain, key, module type) for its operator and every
    subgraph around it."""
    chain = row["modules"]
    inner = chain[0][1] if chain else ""
    out = [("op", (row["op"], pattern(row["module"])), inner)]
    seen = set()
    for path, kind in chain:
        for regex, sub in SUBGRAPH_TYPES:
            if re.search(regex, kind) and kind not in seen:
                seen.add(kind)
                out.append(("subgraph", (sub, kind), kind))
                break
    parent = chain[1][1] if len(chain) > 1 else ""
    if not re.search(r"Linear$", inner):
        owner = inner if re.search(r"MLP$", inner) else parent if re.search(r"MLP$", parent) \
            else None
        if owner:
            out.append(("subgraph", ("act_mul", prefix(owner)), owner))
    if re.search(r"DecoderLayer$", inner) and row["op"] in ("aten::add", "aten::add_"):
        out.append(("subgraph", ("add_norm", prefix(inner)), inner))
    if re.search(r"RMSNorm$", inner) and re.search(r"DecoderLayer$", parent):
        out.append(("subgraph", ("add_norm", prefix(parent)), parent))
    return out


def prefix(kind):
    """The model family's prefix of a module type (`LlamaMLP` -> `Llama`)."""
    m = re.match(r"[A-Z][a-z0-9]+(?:Moe)?", kind)
    return m.group(0) if m else kind


def rank(entries, total_ms, device):
    """Opportunities, best first (without task fields)."""
    units = {}
    for e in entries:
        for name, (steps, wall) in e["timing"].items():
            _add_phase(units, e, name, steps, wall, total_ms)
    ranked = []
    for (grain, key), u in units.items():
        share = min(u["time_ms"] / total_ms, 0.999) if total_ms else 0.0
        floor = sum(roofline.floor_ms(b, f, u["dtype"], device) for b, f in u["floors"])
        headroom = max(0.0, 1.0 - floor / u["time_ms"]) if u["time_ms"] > 0 else 0.0
        phases = sorted(u["by_phase"], key=lambda p: -u["by_phase"][p])
        ranked.append({
            "name": _name(grain, key, phases[0]), "grain": grain, "kind": key[0] if
            grain == "subgraph" else "op", "module_type": u["module_type"],
            "op": key[0] if grain == "op" else None, "module": key[1] if grain == "op" else None,
            "phases": phases, "share": share, "headroom": headroom, "score": share * headroom,
            "amdahl_ceiling": 1.0 / (1.0 - share), "floor_ms": floor,
            "time_ms": u["time_ms"], "size_sets": u["sets"]})
    ranked.sort(key=lambda o: -o["score"])
    taken = set()
    for i, o in enumerate(ranked):
        o["rank"] = i + 1
        base, k = o["name"], 2
        while o["name"] in taken:
            o["name"], k = f"{base}_{k}", k + 1
        taken.add(o["name"])
    return ranked


def _name(grain, key, phase):
    if grain == "op":
        op, path = key
        where = re.sub(r"^model\.|layers\.\*\.", "", path).replace(".*", "")
        text = f"{op.split('::')[-1]}_{where}"
    else:
        kind, module_type = key
        text = module_type if kind not in ("act_mul", "add_norm") else f"{module_type}_{kind}"
    return re.sub(r"[^a-z0-9]+", "_", f"{text}_{phase}".lower()).strip("_")


def _add_phase(units, e, name, steps, wall_total, total_ms):
    """Adds one entry's phase to every unit its rows belong to."""
    profiled = e["profiled"][name]
    rng = e["ranges"].get(name, {"host_us": 0.0, "device_us": 0.0})
    step_wall = wall_total / max(steps, 1)
    busy = rng["device_us"] / 1e3 / profiled
    host_total = max(rng["host_us"] / 1e3 / profiled, 1e-9)
    waiting = max(0.0, step_wall - busy)
    # Profiled device time above the timed wall time (profiler overhead on the CPU) is scaled
    # down to it: a phase's units add up to its wall time.
    fit = min(1.0, step_wall / busy) if busy > 0 else 1.0
    scale = e["weight"] * steps
    for row in e["rows"].values():
        if row["phase"] != name:
            continue
        device_ms = fit * row["device_us"] / 1e3 / profiled
        time_ms = device_ms + waiting * (row["host_us"] / 1e3 / profiled) / host_total
        for grain, key, module_type in units_of(row, e["types"]):
            u = units.setdefault((grain, key), {
                "time_ms": 0.0, "module_type": module_type, "by_phase": {}, "floors": [],
                "dtype": row["dtype"], "sets": {}, "rows": []})
            u["time_ms"] += scale * time_ms
            u["by_phase"][name] = u["by_phase"].get(name, 0.0) + scale * time_ms
            b, f = roofline.op_work(row)
            u["floors"].append((scale * b * row["count"] / profiled,
                                scale * f * row["count"] / profiled))
            label = f"entry{e['entry']}_{name}"
            s = u["sets"].setdefault(label, {"entry": e["entry"], "phase": name,
                                             "weight": 0.0, "rows": []})
            s["weight"] += scale * time_ms / total_ms if total_ms else 0.0
            s["rows"].append(row)
