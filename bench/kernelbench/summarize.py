#!/usr/bin/env python3
"""Summarizes kernelbench_bench reports (the shards of sweep.sh, cut short by a time limit or not).

    bench/kernelbench/summarize.py OUT/shard_*.txt

Reads every per-evaluation line ("PROBLEM CANDIDATE #N: verdict, ...") and prints, in Markdown,
one row per problem (sorted by bytes per call: first evaluation's wall time, the next ones'
median wall time, bridge overhead and its parts), then the figures by bytes per call (the bands
of docs/PERFORMANCE.md) and over all problems. "next" is the median over the evaluations after a
problem's first; a problem evaluated once has no "next" and is listed apart. Reports written
before kernelbench_bench printed bytes per call go in a band of their own ("unknown").
"""
import re
import statistics
import sys

TARGET = 0.5  # seconds of bridge overhead per next candidate (the target in docs/PERFORMANCE.md)
BAND_EDGES = (1.3, 4.4, 9.0)  # GB per call, as kernelbench_bench's own summary

LINE = re.compile(
    r"^(?P<problem>\S+) (?P<candidate>\S+) #(?P<n>\d+): (?P<verdict>\w+), (?P<wall>[\d.]+) s, "
    r"bridge (?P<overhead>[\d.]+) s \(load (?P<load>[\d.]+) map (?P<map>[\d.]+) "
    r"call (?P<call>[\d.]+) check (?P<check>[\d.]+) time (?P<time>[\d.]+) "
    r"copy (?P<copy>[\d.]+)\)(?P<rest>.*?)(?:, (?P<gb>[\d.]+) GB per call)?$")
FLAGS = re.compile(r" flags ([^,]+),")
PARTS = ("load", "map", "call", "check", "time")


def parse(lines):
    """{(problem, candidate): {"gb": float or None, "evals": {n: fields}}} from report lines."""
    problems = {}
    for line in lines:
        m = LINE.match(line.rstrip("\n"))
        if m is None:
            continue
        p = problems.setdefault((m["problem"], m["candidate"]), {"gb": None, "evals": {}})
        if m["gb"] is not None:
            p["gb"] = float(m["gb"])
        fields = {k: float(m[k]) for k in ("wall", "overhead") + PARTS}
        found = FLAGS.search(m["rest"] + ",")
        # A flagged evaluation shows as "valid (flag ...)"; within_noise, which the identity
        # candidate gets by design, is left out.
        flags = [f for f in (found.group(1).split() if found else []) if f != "within_noise"]
        fields["verdict"] = m["verdict"] + (f" ({' '.join(flags)})" if flags else "")
        p["evals"][int(m["n"])] = fields
    return problems


def band_of(gb):
    if gb is None:
        return "unknown"
    lo = 0.0
    for hi in BAND_EDGES:
        if gb <= hi:
            return f"{lo:g} to {hi:g} GB" if lo else f"up to {hi:g} GB"
        lo = hi
    return f"above {lo:g} GB"


def summarize(problems):
    """The Markdown text: rows, bands, totals."""
    rows, once = [], []
    for (name, candidate), p in problems.items():
        evals = p["evals"]
        nexts = [e for n, e in sorted(evals.items()) if n > 1]
        if 1 not in evals or not nexts:
            once.append(name)
            continue
        med = {k: statistics.median(e[k] for e in nexts) for k in ("wall", "overhead") + PARTS}
        verdicts = ", ".join(e["verdict"] for _, e in sorted(evals.items()))
        rows.append((p["gb"], name, verdicts, evals[1]["wall"], med))
    rows.sort(key=lambda r: (r[0] is None, r[0] or 0, r[1]))
    out = ["| problem | GB per call | verdicts | first: wall | next: wall | next: overhead | "
           "load / map / call / check / time |", "|---|---|---|---|---|---|---|"]
    for gb, name, verdicts, first_wall, med in rows:
        size = "?" if gb is None else f"{gb:.2f}" if gb >= 0.01 else f"{gb:.2g}"
        out.append(f"| {name} | {size} | {verdicts} | "
                   f"{first_wall:.1f} s | {med['wall']:.1f} s | **{med['overhead']:.3f}** | "
                   + " / ".join(f"{med[k]:.3f}" for k in PARTS) + " |")
    out += ["", "| bytes per call | problems | next: overhead, median (min-max) | at most "
            f"{TARGET:g} s | call / check / time, medians | next: wall, median |",
            "|---|---|---|---|---|---|"]
    bands = {}
    for row in rows:
        bands.setdefault(band_of(row[0]), []).append(row)
    order = [band_of(e - 1e-9) for e in BAND_EDGES] + [band_of(1e9), "unknown"]
    for band in order:
        if band not in bands:
            continue
        b = bands[band]
        ov = [r[4]["overhead"] for r in b]
        parts = " / ".join(f"{statistics.median(r[4][k] for r in b):.3f}"
                           for k in ("call", "check", "time"))
        out.append(f"| {band} | {len(b)} | {statistics.median(ov):.3f} s ({min(ov):.3f}-"
                   f"{max(ov):.3f}) | {sum(v <= TARGET for v in ov)} | {parts} | "
                   f"{statistics.median(r[4]['wall'] for r in b):.1f} s |")
    if rows:
        ov = [r[4]["overhead"] for r in rows]
        valid = sum(all(v.startswith("valid") for v in r[2].split(", ")) for r in rows)
        flagged = sum("(" in r[2] for r in rows)
        out += ["", f"{len(rows)} problems with a next evaluation: median next overhead "
                f"{statistics.median(ov):.3f} s, {sum(v <= TARGET for v in ov)} at most "
                f"{TARGET:g} s, {valid} valid in every evaluation, {flagged} with a flagged "
                f"evaluation."]
    if once:
        out.append(f"Evaluated once only (no next): {', '.join(sorted(once))}.")
    return "\n".join(out)


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    lines = []
    for path in argv:
        with open(path) as f:
            lines += f.readlines()
    problems = parse(lines)
    if not problems:
        sys.stderr.write("no kernelbench_bench evaluation lines in " + " ".join(argv) + "\n")
        return 1
    print(summarize(problems))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
