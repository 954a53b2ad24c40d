"""`python3 -m kope_deploy.validate --plan DIR/plan.json`: the Python side of `kope deploy`'s
integration step (docs/commands/deploy.md). The plan names the workload and, per task in ranking
order, its candidates best first (kope's recorded attempts; a native one with the shared object
kope compiled). Per task, the first candidate that

1. loads and installs on the model (a patch, patching.Patch),
2. passes the accuracy gate alone (gate.run: engaged, the dtype's rule), and
3. does not lose end to end alone (e2e.measure: no request entry's whole request slower
   beyond the measured noise; a phase that is slower is said in the reason)

is accepted; the others tried are rejected with their reason. The plan's runtime decisions
(`runtime`: decode_graph, where the profile found decode host-bound) go through the same gate
and the same end-to-end rule. The accepted patches are then combined, a runtime patch first
(it changes how every kernel after it is launched), then the kernels in ranking order, each
kept only if the gate still passes with it (patches can interact), measured together and
packaged (artifact.write).
Writes DIR/validation.json and DIR/report.html; progress, done and error lines go to stdout as
JSON, one object a line, as the profiler's do.
"""
import argparse
import json
import os
import sys

from . import artifact, decode_graph, e2e, gate, models, patching, report_html
from .profile import progress, step

FORMAT = "kope-validation-1"


def _loses(measured):
    """The request entries whose whole request (prefill and decode) is slower beyond the
    noise: a patch may trade one phase for the other (a static cache fills more slowly and
    decodes faster), and what counts is the request."""
    return [f"entry {m['entry']} request_ms {m['request_ms']['speedup']:.3f}x (noise "
            f"{m['request_ms']['noise']:.3f})" for m in measured
            if "request_ms" in m and m["request_ms"]["loss"]]


def _phase_losses(measured):
    """The phases slower beyond the noise, said in an accepted patch's reason."""
    return [f"entry {m['entry']} {name} {m[name]['speedup']:.3f}x"
            for m in measured for name, _ in e2e.FIGURES
            if name != "request_ms" and name in m and m[name]["loss"]]


def _noise_note(report):
    """The unpatched model's own figures, for scale."""
    noise = report["noise"].values()
    if not noise:
        return ""
    top1 = min(n["top1_agreement"] for n in noise)
    diff = max(n["max_logit_diff"] for n in noise)
    return (f" (the unpatched model's own noise: top-1 agreement {top1:.4f}, largest logit "
            f"difference {diff:.3g})")


def _wins(measured):
    return any(m[name]["win"] for m in measured for name, _ in e2e.FIGURES if name in m)


# A runtime decision's patch, for one of its variants.
RUNTIME_PATCHES = {"decode_graph": lambda d, v: decode_graph.DecodeGraph(
    d["max_cache_len"], fuse=v.get("fuse", False), fuse_prefill=v.get("fuse_prefill", False))}


def try_candidate(model, workload, unpatched, task, candidate, rounds, judge_speed=True):
    """One candidate of a task through load, gate and e2e: its record, and its patch if
    accepted. Without `judge_speed` the end-to-end figures are measured but reject nothing."""
    record = {"attempt": candidate.get("attempt"), "source": candidate["source"],
              "unit_speedup": candidate.get("speedup")}
    return judge(model, workload, unpatched, record, rounds, judge_speed,
                 lambda: patching.Patch(task["folder"], candidate["source"],
                                        candidate.get("compiled")))


def judge(model, workload, unpatched, record, rounds, judge_speed, make):
    """A patch (`make()`) through install, gate and e2e: its record, and the patch if accepted."""
    try:
        patch = make()
        record["kind"] = patch.kind
        record["gate"] = gate.run(model.module, [patch], workload, unpatched)
    except (patching.PatchError, RuntimeError, ValueError) as e:
        record.update(accepted=False, reason=f"cannot be installed: {e}")
        return record, None
    if not record["gate"]["passed"]:
        record.update(accepted=False, reason="fails in the model: " +
                      "; ".join(record["gate"]["reasons"]) + _noise_note(record["gate"]))
        return record, None
    record["e2e"] = e2e.measure(model, [patch], workload, rounds)
    losses = _loses(record["e2e"]) if judge_speed else []
    if losses:
        record.update(accepted=False, reason="loses end to end: " + "; ".join(losses))
        return record, None
    slower = _phase_losses(record["e2e"])
    record.update(accepted=True, reason=("accepted" if _wins(record["e2e"]) else
                                         "accepted: no end-to-end gain beyond the noise") +
                  (f" (slower: {', '.join(slower)})" if slower else ""))
    patch.alone = record  # its own gate and figures: a patch combined with no other has these
    return record, patch


def validate_task(model, workload, unpatched, task, rounds, index, total, judge_speed):
    out = {"task": task["name"], "folder": task["folder"], "share": task.get("share"),
           "tried": [], "accepted": None}
    for k, candidate in enumerate(task["candidates"]):
        progress("validate", None, index, total, f"{task['name']}: candidate {k + 1} of "
                 f"{len(task['candidates'])} (a{candidate.get('attempt')})")
        record, patch = try_candidate(model, workload, unpatched, task, candidate, rounds,
                                      judge_speed)
        out["tried"].append(record)
        if patch is not None:
            out["accepted"] = record["attempt"]
            return out, patch
    return out, None


def validate_runtime(model, workload, unpatched, decision, rounds, judge_speed):
    """A runtime decision of the plan as a task whose candidates are its variants, tried in
    order until one is accepted: its result, and the accepted variant's patch."""
    out = {"task": decision["name"], "folder": None, "share": None, "tried": [],
           "accepted": None}
    for variant in decision.get("variants") or [{"name": decision["name"]}]:
        progress("validate", None, 0, 1, f"runtime: {decision['name']}, {variant['name']} "
                 f"({decision['reason']})")
        record = {"attempt": None, "source": None, "unit_speedup": None,
                  "variant": variant["name"], "reason_proposed": decision["reason"]}
        if decision["name"] not in RUNTIME_PATCHES:
            record.update(kind="runtime", accepted=False, reason="no such runtime patch")
            out["tried"].append(record)
            return out, None
        record, patch = judge(model, workload, unpatched, record, rounds, judge_speed,
                              lambda: RUNTIME_PATCHES[decision["name"]](decision, variant))
        out["tried"].append(record)
        if patch is not None:
            out["accepted"] = "runtime"
            return out, patch
    return out, None


def combine(model, workload, unpatched, accepted):
    """The accepted patches that pass the gate together, added in ranking order; the dropped
    ones with why."""
    kept, dropped, final = [], [], None
    for patch in accepted:
        report = patch.alone["gate"] if not kept else \
            gate.run(model.module, kept + [patch], workload, unpatched)
        if report["passed"]:
            kept, final = kept + [patch], report
        else:
            dropped.append({"task": patch.name, "reason": "; ".join(report["reasons"])})
    return kept, dropped, final


def run(plan, rounds=e2e.ROUNDS, judge_speed=True):
    with open(plan["workload"]) as f:
        workload = json.load(f)
    progress("build", None, 0, len(plan["tasks"]), "building the model")
    model = models.build(workload)
    progress("reference", None, 0, len(plan["tasks"]), "the unpatched model's gate figures")
    unpatched = gate.reference(model.module, workload)
    tasks, accepted = [], []
    for decision in plan.get("runtime", []):
        result, patch = validate_runtime(model, workload, unpatched, decision, rounds,
                                         judge_speed)
        tasks.append(result)
        if patch is not None:
            accepted.append(patch)
    for i, task in enumerate(plan["tasks"]):
        result, patch = validate_task(model, workload, unpatched, task, rounds, i,
                                      len(plan["tasks"]), judge_speed)
        tasks.append(result)
        if patch is not None:
            accepted.append(patch)
    kept, dropped, final = combine(model, workload, unpatched, accepted)
    out = {"format": FORMAT, "workload": workload["name"], "tasks": tasks, "dropped": dropped,
           "patches": [p.name for p in kept], "gate": final, "e2e": None, "artifact": None}
    if len(kept) == 1:
        out["e2e"] = kept[0].alone["e2e"]
    elif kept:
        progress("measure", None, 0, 1, f"end to end with {len(kept)} patches together")
        out["e2e"] = e2e.measure(model, kept, workload, rounds)
    if kept:
        out["artifact"] = artifact.write(plan["out"], workload["name"], kept, final,
                                         plan.get("provenance", {}))
    return out


def main(argv):
    parser = argparse.ArgumentParser(prog="kope_deploy.validate")
    parser.add_argument("--plan", required=True)
    parser.add_argument("--rounds", type=int, default=e2e.ROUNDS)
    args = parser.parse_args(argv)

    def body():
        with open(args.plan) as f:
            plan = json.load(f)
        result = run(plan, args.rounds)
        path = os.path.join(plan["out"], "validation.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        with open(os.path.join(plan["out"], "report.html"), "w") as f:
            f.write(report_html.page(result, plan))
        return path
    return step(body, (models.WorkloadError, gate.GateError))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
