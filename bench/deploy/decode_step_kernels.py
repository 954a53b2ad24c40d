"""Where a decode step's GPU time goes: its kernels by name, as the decode-graph patch runs them.

    python3 bench/deploy/decode_step_kernels.py DIR/workload.json [--steps 32] [--top 12]

DIR/workload.json is what `kope deploy profile WORKLOAD.toml --out DIR --dry-run` writes. Per
request entry, the decode_graph patch runs generate() with its steps eager (capture off: the
kernels a captured graph replays, each visible to the profiler), once as it is and once with its
step compiled (`fuse`); torch.profiler records the decode steps' kernels. Printed per entry and
side: GPU time per step, kernels per step, and the largest kernels' share. Kernel time here is
the same work a replayed graph runs; the gaps between kernels are not in it.
"""
import argparse
import collections
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kope_deploy import decode_graph, models, runs  # noqa: E402


def kernels(model, request, patch, steps):
    """{kernel name: (calls, device us)} of `steps` decode steps, and the steps timed."""
    ids = runs.prompt_ids(model.module, request, "cuda")
    args = dict(attention_mask=torch.ones_like(ids), do_sample=False, pad_token_id=0,
                eos_token_id=None)
    patch.apply(model.module)
    patch.capture = False  # every step eager: its kernels seen one by one
    try:
        with torch.inference_mode():
            for _ in range(2):  # warm-up: the compiled step's compilation, the libraries
                model.module.generate(ids, max_new_tokens=3, **args)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
                model.module.generate(ids, max_new_tokens=1, **args)  # the prefill alone
            prefill = _table(p)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
                model.module.generate(ids, max_new_tokens=steps + 1, **args)
            both = _table(p)
    finally:
        patch.release()
    out = {}
    for name, (calls, us) in both.items():
        pc, pu = prefill.get(name, (0, 0.0))
        if calls - pc > 0:
            out[name] = (calls - pc, us - pu)
    return out


def _table(prof):
    out = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            out[e.name][0] += 1
            out[e.name][1] += e.device_time
    return {k: tuple(v) for k, v in out.items()}


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("workload")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    with open(args.workload) as f:
        workload = json.load(f)
    model = models.build(workload)
    longest = max(r["prompt"] + r["decode"] for r in workload["requests"]) + 2
    summary = []
    for request in workload["requests"]:
        for side, fuse in (("graph", False), ("fused", True)):
            table = kernels(model, request, decode_graph.DecodeGraph(longest, fuse=fuse),
                            args.steps)
            total = sum(us for _, us in table.values())
            count = sum(c for c, _ in table.values())
            print(f"\nbs {request['batch']} {side}: {total / args.steps / 1e3:.3f} ms of kernels "
                  f"per step, {count / args.steps:.0f} kernels per step")
            for name, (calls, us) in sorted(table.items(), key=lambda kv: -kv[1][1])[:args.top]:
                print(f"  {100 * us / total:5.1f}% {us / args.steps:8.1f} us/step "
                      f"{calls / args.steps:6.1f}/step  {name[:110]}")
            summary.append((request["batch"], side, total / args.steps / 1e3,
                            count / args.steps))
    print(f"\n{'bs':>3} {'side':<6} {'kernel ms/step':>14} {'kernels/step':>12}")
    for batch, side, ms, n in summary:
        print(f"{batch:>3} {side:<6} {ms:>14.3f} {n:>12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
