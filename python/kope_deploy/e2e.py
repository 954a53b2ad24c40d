"""End-to-end speed inside the model: the unpatched and the patched model interleaved in one
process, in the mode the workload runs (runs.run_entry: generate(), or a static cache compiled),
several rounds, per request entry: prefill latency, decode tokens per second and the whole
request's time, medians with their spread. A patched figure is a win only beyond the noise (the
larger relative spread, (p80 - p20) / median, of the two sides) and in every round: each round
times both sides one after the other, and its ratio is that round's speedup. A loss likewise, so
that one slow moment of a busy machine makes neither. Under MIN_ROUNDS rounds the noise is not
known, and there is neither. `contributions` measures every patch alone and all of them
together, so that a reader sees where a gain comes from."""
import statistics

from . import runs

ROUNDS = 5
MIN_ROUNDS = 3  # rounds a win or a loss needs
# Per request entry: (figure, higher is better). request_ms is the whole request, the prompt's
# prefill and every decode step: what its user waits for.
FIGURES = (("prefill_ms", False), ("decode_tokens_per_s", True), ("request_ms", False))


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
    prefill_ms = totals["prefill"][1]
    return (prefill_ms, request["batch"] * steps / (decode_ms / 1e3) if decode_ms else None,
            prefill_ms + decode_ms)


def _side(values, higher_is_better):
    out = _quantiles(values)
    out["spread"] = (out["p80"] - out["p20"]) / out["median"] if out["median"] else 0.0
    out["higher_is_better"] = higher_is_better
    return out


def _ratio(unpatched, patched, higher_is_better):
    return patched / unpatched if higher_is_better else unpatched / patched


def _verdict(unpatched, patched, rounds):
    """speedup (> 1: the patched side is faster), noise, the per-round speedups, win, loss."""
    higher = unpatched["higher_is_better"]
    speedup = _ratio(unpatched["median"], patched["median"], higher)
    noise = max(unpatched["spread"], patched["spread"])
    per_round = [_ratio(a, b, higher) for a, b in rounds]
    known = len(per_round) >= MIN_ROUNDS
    return {"speedup": speedup, "noise": noise, "round_speedups": per_round,
            "win": known and speedup - 1 > noise and all(r > 1 for r in per_round),
            "loss": known and 1 - speedup > noise and all(r < 1 for r in per_round)}


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
        for k, (name, higher) in enumerate(FIGURES):
            paired = [(u[k], p[k]) for u, p in zip(samples[False], samples[True])
                      if u[k] is not None and p[k] is not None]
            if not paired:
                continue
            a = _side([u for u, _ in paired], higher)
            b = _side([p for _, p in paired], higher)
            entry[name] = {"unpatched": a, "patched": b, **_verdict(a, b, paired)}
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
