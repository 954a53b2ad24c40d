"""The decode-graph runtime patch end to end, beside the two paths a user would otherwise run.

    python3 bench/deploy/decode_graph_bench.py DIR/workload.json [--rounds 3] [--json OUT]

DIR/workload.json is what `kope deploy profile WORKLOAD.toml --out DIR --dry-run` writes. In one
process, per request entry, interleaved (the order rotating each round): eager generate() (the
unpatched model), the same with the decode_graph patch (kope_deploy/decode_graph.py) without
its generate() loop (kope-graph: the captured step, generate()'s own loop around it) and whole
(kope-loop: its loop, without generate()'s synchronization after every step), the whole patch
with its step compiled before capture and its projections merged (kope-fused-step) and with its
prefill compiled too (kope-fused), and transformers' own fast path (a static cache with
generate() compiling the decode step, mode "reduce-overhead"). Each side is warmed up first (the
fused ones first, since they move the projections' weights once; the compiled sides twice:
compilation, then their graphs). Figures per side: prefill ms and decode ms per step (medians
over rounds, each round one generate() call), decode tokens/s; the patched prefill's and step's
GPU time (their graphs replayed alone, back to back) as the GPU-busy fraction of theirs; the
weights' bandwidth floor (parameter bytes over 4.25 TB/s) and each step's share of it. Then the
accuracy gate of the three patched variants (the workload's rules). The last lines are a table.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kope_deploy import decode_graph, gate, models, runs  # noqa: E402

BANDWIDTH = 4.25e12  # bytes/s: the H200's measured copy bandwidth


def run_side(model, workload, request, side, patches):
    mode = "cuda-graphs" if side == "hf-compiled" else "generate"
    w = dict(workload, run=dict(workload["run"], mode=mode))
    patch = patches.get(side)
    if patch is not None:
        patch.apply(model.module)
    try:
        totals = runs.run_entry(model, w, request, request["decode"]).totals()
    finally:
        if patch is not None:
            patch.remove()
    steps, decode_ms = totals["decode"]
    return totals["prefill"][1], decode_ms / steps


@torch.inference_mode()
def replay_ms(patch, phase, batch, prompt, steps=50):
    """A captured graph's GPU time: the batch size's `phase` ("prefill" or "decode") graph
    replayed `steps` times back to back, the cache's length set to where the phase starts first
    (each replay appends to it; a prefill's, set back before every replay by one kernel)."""
    patch.apply(patch.model)  # the state the patch's graphs would serve now
    state = patch.states.get(decode_graph._state(patch.model))
    patch.remove()
    graphs = [g for key, g in patch.graphs.items()
              if g and key[0] == state and key[1] == phase and key[2][1][0] == batch]
    if not graphs:
        return None
    graph = graphs[-1][0]  # the latest shape captured over the model as it is now
    lengths = [layer.cumulative_length for layer in patch.caches[batch].layers]
    for length in lengths:
        length.fill_(prompt if phase == "decode" else 0)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    for _ in range(steps):
        if phase == "prefill":
            torch._foreach_zero_(lengths)
        graph.replay()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / steps


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("workload")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--no-compiled", action="store_true",
                        help="leave transformers' compiled path out (where it cannot run)")
    args = parser.parse_args(argv)
    with open(args.workload) as f:
        workload = json.load(f)
    model = models.build(workload)
    params = sum(p.numel() * p.element_size() for p in model.module.parameters())
    floor_ms = 1e3 * params / BANDWIDTH
    longest = max(r["prompt"] + r["decode"] for r in workload["requests"]) + gate.MAX_DECODE + 2
    sides = ("eager", "kope-graph", "kope-loop", "kope-fused-step", "kope-fused") + \
        (() if args.no_compiled else ("hf-compiled",))
    # The fused variants first: they move the projections' weights into merged tensors once,
    # before the other sides capture graphs over them.
    warm_up = sorted(sides, key=lambda side: not side.startswith("kope-fused"))
    rows = []
    for request in workload["requests"]:
        # kope-graph: the captured step alone, generate()'s own loop around it; kope-loop: the
        # whole patch, its loop without generate()'s per-step synchronization.
        patches = {"kope-graph": decode_graph.DecodeGraph(longest, loop=False),
                   "kope-loop": decode_graph.DecodeGraph(longest),
                   "kope-fused-step": decode_graph.DecodeGraph(longest, fuse=True),
                   "kope-fused": decode_graph.DecodeGraph(longest, fuse=True, fuse_prefill=True)}
        patch = patches["kope-graph"]
        t0 = time.time()
        for side in warm_up:
            for _ in range(2 if side == "hf-compiled" or side.startswith("kope-fused") else 1):
                run_side(model, workload, request, side, patches)
        print(f"entry bs {request['batch']}: warmed up in {time.time() - t0:.0f} s", flush=True)
        samples = {s: [] for s in sides}
        for r in range(args.rounds):
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            for side in order:
                samples[side].append(run_side(model, workload, request, side, patches))
        b, n = request["batch"], request["prompt"]
        row = {"batch": b, "prompt": n, "decode": request["decode"], "floor_ms": floor_ms,
               "replay_ms": replay_ms(patch, "decode", b, n),  # graphs are kept when removed
               "fused_replay_ms": replay_ms(patches["kope-fused"], "decode", b, n),
               "prefill_replay_ms": replay_ms(patch, "prefill", b, n),
               "fused_prefill_replay_ms": replay_ms(patches["kope-fused"], "prefill", b, n),
               "engagement": {k: p.engagement() for k, p in patches.items()}}
        for p in patches.values():
            p.release()
        for side in sides:
            prefill = statistics.median(s[0] for s in samples[side])
            step = statistics.median(s[1] for s in samples[side])
            row[side] = {"prefill_ms": prefill, "step_ms": step,
                         "step_ms_all": [s[1] for s in samples[side]],
                         "tokens_per_s": request["batch"] * 1e3 / step}
        rows.append(row)
        print(json.dumps(row), flush=True)
    gate_report = gate.run(model.module, [decode_graph.DecodeGraph(longest)], workload)
    fused_gate = gate.run(model.module, [decode_graph.DecodeGraph(longest, fuse=True,
                                                                  fuse_prefill=True)], workload)
    step_gate = gate.run(model.module, [decode_graph.DecodeGraph(longest, fuse=True)], workload)
    print("gate:", json.dumps({k: gate_report[k] for k in
                               ("passed", "reasons", "greedy_agreement", "patched", "noise",
                                "engagement")}), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "gate": gate_report, "fused_gate": fused_gate,
                       "fused_step_gate": step_gate,
                       "params_bytes": params}, f, indent=1)
    print(f"\n{'bs':>3} {'side':<12} {'prefill ms':>10} {'vs eager':>8} {'ms/step':>8} "
          f"{'tok/s':>8} {'vs eager':>8} {'vs hf':>6} {'floor %':>7}")
    for row in rows:
        hf = row["hf-compiled"]["step_ms"] if "hf-compiled" in row else float("nan")
        for side in sides:
            s = row[side]
            prefill = row["eager"]["prefill_ms"] / s["prefill_ms"]
            print(f"{row['batch']:>3} {side:<12} {s['prefill_ms']:>10.2f} {prefill:>8.2f} "
                  f"{s['step_ms']:>8.3f} "
                  f"{s['tokens_per_s']:>8.1f} {row['eager']['step_ms'] / s['step_ms']:>8.2f} "
                  f"{hf / s['step_ms']:>6.2f} "
                  f"{100 * floor_ms / s['step_ms']:>7.1f}")
        if row["replay_ms"]:
            busy = ", ".join(f"{100 * row['replay_ms'] / row[s]['step_ms']:.0f}% of {s}'s"
                             for s in ("kope-graph", "kope-loop"))
            print(f"{row['batch']:>3} graph replay alone {row['replay_ms']:.3f} ms/step: GPU-busy "
                  f"{busy} step; Amdahl ceiling of removing the host time from eager: "
                  f"{row['eager']['step_ms'] / row['replay_ms']:.1f}x")
        if row["fused_replay_ms"]:
            fused = row["fused_replay_ms"]
            print(f"{row['batch']:>3} fused graph replay alone {fused:.3f} ms/step: GPU-busy "
                  f"{100 * fused / row['kope-fused']['step_ms']:.0f}% of kope-fused's step")
        if row["prefill_replay_ms"]:
            alone = row["prefill_replay_ms"]
            print(f"{row['batch']:>3} prefill graph replay alone {alone:.3f} ms: GPU-busy "
                  f"{100 * alone / row['kope-loop']['prefill_ms']:.0f}% of kope-loop's prefill; "
                  f"Amdahl ceiling against eager's: {row['eager']['prefill_ms'] / alone:.1f}x")
        if row["fused_prefill_replay_ms"]:
            alone = row["fused_prefill_replay_ms"]
            print(f"{row['batch']:>3} fused prefill graph replay alone {alone:.3f} ms: GPU-busy "
                  f"{100 * alone / row['kope-fused']['prefill_ms']:.0f}% of kope-fused's prefill")
    for name, report in (("kope-loop", gate_report), ("kope-fused-step", step_gate),
                         ("kope-fused", fused_gate)):
        print(f"gate of {name}: passed {report['passed']} {report['reasons']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
