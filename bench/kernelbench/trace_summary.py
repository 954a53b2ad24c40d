"""Sums a request trace (KOPE_TRACE_REQUESTS, docs/EVALUATION.md "Tracing requests") by
evaluation, runner, request type and size set, for finding where an evaluation's time goes.

    python3 bench/kernelbench/trace_summary.py TRACE.tsv [--bench-bytes N]

An evaluation starts at a LOAD that follows any other request. A request belongs to the bench
size when its arena is at least --bench-bytes (default: half the largest arena of that
evaluation), else to the check sizes. Runners are named by the order in which they first appear
in the evaluation (r0, r1, ...). Prints, per evaluation, one row per (runner, type, size set):
requests, the parent's wall time and the kernel time they took (ms), and the evaluation's span
against the sum of its requests (the rest is the parent's own work).
"""
import argparse
import collections
import csv
import sys


SHARES = ("share", "map_shared")


def evaluations(rows):
    """Splits trace rows into evaluations, each a list of rows."""
    out, current, last = [], [], None
    for row in rows:
        if row["request"] == "load" and last is not None and last != "load":
            out.append(current)
            current = []
        current.append(row)
        last = row["request"]
    if current:
        out.append(current)
    return out


def summarize(evaluation, bench_bytes=None):
    """Returns (rows, span_ms, requests_ms): rows of (runner, request, size set, count,
    parent ms, kernel ms), largest parent time first."""
    kinds = SHARES if any(r["request"] in SHARES for r in evaluation) else ("map",)
    sized = [int(r["arena_bytes"]) for r in evaluation if r["request"] in kinds]
    limit = bench_bytes or max(sized, default=0) // 2 or 1
    names, sums = {}, collections.defaultdict(lambda: [0, 0.0, 0.0])
    current = None
    for r in evaluation:
        name = names.setdefault(r["pid"], f"r{len(names)}")
        if r["request"] in kinds:
            current = int(r["arena_bytes"])
        size = "bench" if (current or int(r["arena_bytes"])) >= limit else "check"
        s = sums[(name, r["request"], size)]
        s[0] += 1
        s[1] += float(r["parent_ms"])
        s[2] += float(r["kernel_ms"])
    rows = sorted(((k[0], k[1], k[2], v[0], v[1], v[2]) for k, v in sums.items()),
                  key=lambda row: -row[4])
    last = evaluation[-1]
    span = (float(last["t_s"]) - float(evaluation[0]["t_s"])) * 1e3 + float(last["parent_ms"])
    return rows, span, sum(row[4] for row in rows)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--bench-bytes", type=int, default=None)
    args = parser.parse_args(argv)
    with open(args.trace, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows:
        sys.exit(f"{args.trace}: no requests")
    for i, evaluation in enumerate(evaluations(rows)):
        table, span, requests = summarize(evaluation, args.bench_bytes)
        print(f"evaluation {i}: {len(evaluation)} requests, span {span:.1f} ms, "
              f"in requests {requests:.1f} ms")
        print(f"  {'runner':6} {'request':10} {'size':5} {'n':>5} {'parent ms':>10} "
              f"{'kernel ms':>10}")
        for name, request, size, n, parent, kernel in table:
            print(f"  {name:6} {request:10} {size:5} {n:5d} {parent:10.1f} {kernel:10.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
