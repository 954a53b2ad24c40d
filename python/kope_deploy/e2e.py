"""End-to-end speed inside the model: the unpatched and the patched model interleaved in one
process, in the mode the workload runs (runs.run_entry: generate(), or a static cache compiled),
several rounds, per request entry: prefill latency and decode tokens per second, medians with
their spread. A patched figure is a win only beyond the noise: the larger relative spread
((p80 - p20) / median) of the two sides. `contributions` measures every patch alone and all of
them together, so that a reader sees where a gain comes from."""
import statistics

from . import runs

ROUNDS = 5


def _quantiles(values):
    values = sorted(values)
    q = statistics.quantiles(values, n=5, method="inclusive") if len(values) > 1 else values * 4
    return {"median": statistics.median(values), "p20": q[0], "p80": q[3], "samples": len(values)}


def _sample(model, workload, request, patches, patched):
    for p in patches if patched else ():
        p.apply(model.module)
    try:
        totals = runs.run_entry(model, workload, request, request["decode"]).totals()
    finally:
        for p in patches if patched else ():
            p.remove()
    steps, decode_ms = totals.get("decode", (0, 0.0))
    return totals["prefill"][1], request["batch"] * steps / (decode_ms / 1e3) if decode_ms else None


def _side(values, higher_is_better):
    out = _quantiles(values)
    out["spread"] = (out["p80"] - out["p20"]) / out["median"] if out["median"] else 0.0
    out["higher_is_better"] = higher_is_better
    return out


def _verdict(unpatched, patched):
    """speedup (> 1: the patched side is faster), noise, win."""
    if unpatched["higher_is_better"]:
        speedup = patched["median"] / unpatched["median"]
    else:
        speedup = unpatched["median"] / patched["median"]
    noise = max(unpatched["spread"], patched["spread"])
    return {"speedup": speedup, "noise": noise, "win": speedup - 1 > noise,
            "loss": 1 - speedup > noise}


def measure(model, patches, workload, rounds=ROUNDS):
    """[{entry, prefill_ms: {unpatched, patched, speedup, noise, win, loss}, decode_tokens_per_s:
    the same}] per request entry; `model` is models.Model."""
    out = []
    for i, request in enumerate(workload["requests"]):
        samples = {False: [], True: []}
        for patched in (False, True):  # warm-up: caches, compiled graphs, first-call costs
            _sample(model, workload, request, patches, patched)
        for r in range(rounds):
            for patched in ((False, True) if r % 2 == 0 else (True, False)):
                samples[patched].append(_sample(model, workload, request, patches, patched))
        entry = {"entry": i, "batch": request["batch"], "prompt": request["prompt"],
                 "decode": request["decode"]}
        for k, (name, higher) in enumerate((("prefill_ms", False),
                                            ("decode_tokens_per_s", True))):
            sides = {p: [s[k] for s in samples[p] if s[k] is not None] for p in samples}
            if not sides[False] or not sides[True]:
                continue
            a, b = _side(sides[False], higher), _side(sides[True], higher)
            entry[name] = {"unpatched": a, "patched": b, **_verdict(a, b)}
        out.append(entry)
    return out


def contributions(model, patches, workload, rounds=ROUNDS):
    """{"all": measure(every patch), task name: measure(that patch alone)} (alone only where
    there is more than one patch)."""
    out = {"all": measure(model, patches, workload, rounds)}
    if len(patches) > 1:
        for p in patches:
            out[p.name] = measure(model, [p], workload, rounds)
    return out
