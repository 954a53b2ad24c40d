"""The deployment report as one self-contained HTML page (no scripts, no external assets): the
end-to-end speedup per request entry and phase, each patch's own contribution, the accuracy gate
beside the unpatched model's noise, and every candidate that was rejected, with why."""
import html

PHASES = (("prefill_ms", "prefill"), ("decode_tokens_per_s", "decode"))
STYLE = """body{font:14px system-ui,sans-serif;margin:2em;max-width:60em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left}th{background:#f4f4f4}.win{color:#1a7f37}.loss{color:#b42318}.muted{color:#777}
svg text{font:12px system-ui,sans-serif}"""


def _bars(rows, width=560):
    """An SVG bar chart of (label, speedup, noise) with a line at 1x."""
    if not rows:
        return '<p class="muted">nothing measured</p>'
    top = max(2.0, max(s for _, s, _ in rows) * 1.1)
    scale, left, h = (width - 200) / top, 190, 22
    out = [f'<svg width="{width}" height="{h * len(rows) + 24}" role="img">']
    for i, (label, speedup, noise) in enumerate(rows):
        y = i * h + 4
        colour = "#1a7f37" if speedup - 1 > noise else "#b42318" if 1 - speedup > noise \
            else "#888"
        out.append(f'<text x="0" y="{y + 14}">{html.escape(label)}</text>'
                   f'<rect x="{left}" y="{y}" width="{speedup * scale:.1f}" height="{h - 6}" '
                   f'fill="{colour}"/><text x="{left + speedup * scale + 4:.1f}" y="{y + 14}">'
                   f'{speedup:.2f}x ±{noise:.0%}</text>')
    one = left + scale
    out.append(f'<line x1="{one:.1f}" x2="{one:.1f}" y1="0" y2="{h * len(rows) + 4}" '
               'stroke="#222" stroke-dasharray="3,3"/>')
    out.append(f'<text x="{one - 8:.1f}" y="{h * len(rows) + 18}">1x</text></svg>')
    return "".join(out)


def _e2e_rows(measured, prefix=""):
    return [(f"{prefix}entry {m['entry']} (bs {m['batch']}) {phase}", m[key]["speedup"],
             m[key]["noise"]) for m in measured or [] for key, phase in PHASES if key in m]


def _table(header, rows):
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _figures(m, key):
    if key not in m:
        return "-"
    side = m[key]
    unit = "ms" if key == "prefill_ms" else "tok/s"
    cls = "win" if side["win"] else "loss" if side["loss"] else "muted"
    return (f'{side["unpatched"]["median"]:.4g} → {side["patched"]["median"]:.4g} {unit} '
            f'<span class="{cls}">{side["speedup"]:.3f}x</span>')


def page(result, plan):
    e = html.escape
    parts = [f"<!doctype html><meta charset=utf-8><title>kope deploy: {e(result['workload'])}"
             f"</title><style>{STYLE}</style><h1>kope deploy: {e(result['workload'])}</h1>"]
    parts.append(f"<p>Accepted patches: {e(', '.join(result['patches']) or 'none')}. "
                 f"Artifact: <code>{e(result['artifact'] or '-')}</code></p>")
    parts.append("<h2>End to end, all accepted patches</h2>" + _bars(_e2e_rows(result["e2e"])))
    if result["e2e"]:
        parts.append(_table(["entry", "prefill", "decode"],
                            [[f"{m['entry']} (bs {m['batch']}, prompt {m['prompt']}, "
                              f"decode {m['decode']})", _figures(m, "prefill_ms"),
                              _figures(m, "decode_tokens_per_s")] for m in result["e2e"]]))
    alone = []
    for t in result["tasks"]:
        for r in t["tried"]:
            if r.get("accepted"):
                alone += _e2e_rows(r.get("e2e"), f"{t['task']}: ")
    parts.append("<h2>Each patch alone</h2>" + _bars(alone))
    if result["gate"]:
        g = result["gate"]
        rows = [["patched", f"{g['greedy_agreement']:.4f}", *_gate_cells(g["patched"])]]
        rows += [[f"noise: {e(k)}", "-", *_gate_cells(v)] for k, v in g["noise"].items()]
        parts.append("<h2>Accuracy gate</h2>" + _table(
            ["", "greedy agreement", "top-1 agreement", "KL", "max logit diff"], rows))
    tried = [[e(t["task"]), f"a{r.get('attempt')}", e(r.get("kind", "-")),
              f"{r['unit_speedup']:.2f}x" if r.get("unit_speedup") else "-",
              _gate_summary(r.get("gate")), ("✓ " if r.get("accepted") else "✗ ") +
              e(r["reason"])] for t in result["tasks"] for r in t["tried"]]
    tried += [[e(d["task"]), "-", "-", "-", "-", "✗ dropped when combined: " + e(d["reason"])]
              for d in result["dropped"]]
    parts.append("<h2>Candidates tried</h2>" + _table(
        ["task", "attempt", "kind", "unit speedup", "gate: patched (unpatched noise)",
         "in the model"], tried))
    return "\n".join(parts) + "\n"


def _gate_summary(g):
    """Top-1 agreement and largest logit difference, the unpatched model's worst noise beside."""
    if not g:
        return "-"
    p = g["patched"]
    top1 = min((n["top1_agreement"] for n in g["noise"].values()), default=1.0)
    diff = max((n["max_logit_diff"] for n in g["noise"].values()), default=0.0)
    return (f"top-1 {p['top1_agreement']:.4f} ({top1:.4f}), max logit diff "
            f"{p['max_logit_diff']:.3g} ({diff:.3g})")


def _gate_cells(figures):
    return [f"{figures['top1_agreement']:.4f}", f"{figures['kl']:.3g}",
            f"{figures['max_logit_diff']:.3g}"]
