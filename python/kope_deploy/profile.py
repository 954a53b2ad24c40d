"""`python3 -m kope_deploy.profile --workload DIR/workload.json --out DIR`: the Python side of
`kope deploy profile` (docs/commands/deploy.md; the output: docs/PROFILE_JSON.md).

Per request entry: a warm-up run at its shapes, a timed run of every decode step (no profiler),
and a profiled run of the prefill and a few decode steps (PROFILED_STEPS) in eager mode with
module hooks. Progress, done and error lines go to stdout as JSON, one object a line; tracebacks
to stderr.
"""
import argparse
import json
import os
import sys
import traceback

import torch

from . import attribution, chart, extract, models, ranking, roofline, runs

PROFILED_STEPS = 4  # decode steps profiled per entry (all of them are timed)
SCHEMA = 1


def emit(obj):
    print(json.dumps(obj), flush=True)


def progress(step, entry, done, total, message):
    emit({"type": "progress", "step": step, "entry": entry, "done": done, "total": total,
          "message": message})


def profile_entry(model, workload, i, request):
    n = len(workload["requests"])
    progress("prefill", i, i, n, f"entry {i}: warm-up and timing of {request['decode']} "
             f"decode steps (batch {request['batch']}, prompt {request['prompt']})")
    # Each entry is warmed up at the timed run's shapes, every decode step of them: a compiled
    # mode's static cache has that shape, and in eager mode libraries set up per shape on first
    # use (cuDNN's attention builds a plan for every key length: a first pass over 128 decode
    # steps of a 1B model on an H200 took 4x a user's steady state).
    runs.run_entry(model, workload, request, request["decode"])
    timing = runs.run_entry(model, workload, request, request["decode"]).totals()
    steps = min(PROFILED_STEPS, request["decode"])
    progress("decode", i, i, n, f"entry {i}: profiling the prefill and {steps} decode steps")
    cuda = workload["run"]["device"] == "cuda"
    hooks = attribution.Hooks(model.module, capture=extract.capture_paths(model.module))
    activities = [torch.profiler.ProfilerActivity.CPU] + \
        ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    try:
        with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
            profiled = runs.run_entry(model, workload, request, steps, eager=True).totals()
    finally:
        hooks.remove()
    rows, ranges, modules = attribution.read(prof, cuda, workload["run"]["dtype"])
    return {"entry": i, "weight": request["weight"], "request": request, "timing": timing,
            "profiled": {p: s for p, (s, _) in profiled.items()}, "rows": rows,
            "ranges": ranges, "modules": modules, "types": hooks.types, "calls": hooks.calls,
            "captures": hooks.captures}


def environment(workload):
    import transformers
    device = torch.cuda.get_device_name() if workload["run"]["device"] == "cuda" else "cpu"
    return {"device": device, "torch": torch.__version__, "transformers": transformers.__version__,
            "profiled_decode_steps": PROFILED_STEPS, "roofline": roofline.FLOOR}


def op_table(entries):
    out = []
    for e in entries:
        for row in e["rows"].values():
            p = e["profiled"][row["phase"]]
            out.append({"entry": e["entry"], "phase": row["phase"], "module": row["module"],
                        "module_type": row["module_type"], "op": row["op"],
                        "shapes": row["shapes"], "dtype": row["dtype"],
                        "count": row["count"] / p, "gpu_ms": row["device_us"] / 1e3 / p,
                        "host_ms": row["host_us"] / 1e3 / p})
    out.sort(key=lambda r: -r["gpu_ms"])
    return out


def step(body, expected=(models.WorkloadError,)):
    """Runs a step of kope deploy: `body()` returns the path of its result file, named by the done
    line; an `expected` error is its message alone, any other one with its traceback on stderr.
    The exit status."""
    try:
        path = body()
    except expected as e:
        emit({"type": "error", "message": str(e)})
        return 2
    except Exception as e:
        traceback.print_exc()
        emit({"type": "error", "message": f"{type(e).__name__}: {e}"})
        return 2
    emit({"type": "done", "profile": path})
    return 0


def main(argv):
    parser = argparse.ArgumentParser(prog="kope_deploy.profile")
    parser.add_argument("--workload", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--top", type=int, default=None)
    args = parser.parse_args(argv)

    def body():
        with open(args.workload) as f:
            workload = json.load(f)
        top = args.top if args.top is not None else workload["extract"]["top"]
        return run(workload, args.out, top)
    return step(body)


def run(workload, out, top):
    os.makedirs(out, exist_ok=True)
    n = len(workload["requests"])
    progress("build", None, 0, n, f"building the model ({workload['model']['source']})")
    model = models.build(workload)
    entries = [profile_entry(model, workload, i, r) for i, r in enumerate(workload["requests"])]
    phases, weighted, total_ms = ranking.weigh_phases(entries)
    opportunities = ranking.rank(entries, total_ms, workload["run"]["device"])
    progress("extract", None, 0, top, f"writing up to {top} task folders")
    extract.write_tasks(model, workload, entries, opportunities, out, top,
                        lambda k, name: progress("extract", None, k, top, f"wrote tasks/{name}"))
    for o in opportunities:
        o["size_sets"] = o.pop("task_sets", None)
    profile = {"schema": SCHEMA, "workload": workload, "environment": environment(workload),
               "phases": phases, "weighted": dict(weighted, request_ms=total_ms),
               "ops": op_table(entries), "opportunities": opportunities}
    path = os.path.join(out, "profile.json")
    with open(path, "w") as f:
        json.dump(profile, f, indent=1)
    with open(os.path.join(out, "profile.svg"), "w") as f:
        f.write(chart.svg(profile))
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
