"""profile.svg: one horizontal bar per request entry and phase, its length the phase's weighted
share of the workload's time, split into GPU time by operator family and the GPU's idle time.
Plain SVG, no plotting library."""
import html

FAMILIES = [  # (family, colour, words in the operator's name)
    ("matmul", "#4e79a7", ("mm", "linear", "matmul", "addmm", "bmm", "gemm", "gemv")),
    ("attention", "#f28e2b", ("attention", "flash", "sdpa", "softmax")),
    ("norm", "#59a14f", ("norm", "rsqrt", "pow", "mean", "var")),
    ("elementwise", "#b07aa1", ("mul", "add", "silu", "gelu", "neg", "cat", "sub", "div",
                                "exp", "sigmoid", "tanh", "copy", "to", "index")),
    ("other", "#9c755f", ()),
]
IDLE = ("GPU idle (host, launches)", "#d3d3d3")


def family(op):
    name = op.split("::")[-1].lower()
    for fam, _, words in FAMILIES:
        if any(w in name for w in words):
            return fam
    return "other"


def svg(profile):
    phases = profile["phases"]
    width, left, bar, gap = 760, 170, 26, 10
    top = 50
    height = top + len(phases) * (bar + gap) + 40 + 20 * (len(FAMILIES) + 1)
    most = max([p["weight"] for p in phases] + [1e-12])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="10" y="22" font-size="15">{html.escape(profile["workload"]["name"])}: '
           'share of the workload\'s time by phase and operator family</text>']
    for k, p in enumerate(phases):
        y = top + k * (bar + gap)
        out.append(f'<text x="10" y="{y + 17}">entry {p["entry"]} {p["phase"]} '
                   f'({100 * p["weight"]:.1f}%)</text>')
        span = (width - left - 20) * p["weight"] / most
        x = left
        for label, colour, part in _parts(profile, p):
            w = span * part
            if w > 0.2:
                out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar}" '
                           f'fill="{colour}"><title>{html.escape(label)}: '
                           f'{100 * part:.1f}% of this phase</title></rect>')
            x += w
    y = top + len(phases) * (bar + gap) + 20
    for label, colour in [(f, c) for f, c, _ in FAMILIES] + [IDLE]:
        out.append(f'<rect x="10" y="{y - 10}" width="12" height="12" fill="{colour}"/>'
                   f'<text x="28" y="{y}">{html.escape(label)}</text>')
        y += 20
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _parts(profile, p):
    """(label, colour, fraction of the phase's wall time) for the phase's GPU time by family,
    then the idle time."""
    by_family = {}
    for row in profile["ops"]:
        if row["entry"] == p["entry"] and row["phase"] == p["phase"]:
            f = family(row["op"])
            by_family[f] = by_family.get(f, 0.0) + row["gpu_ms"]
    busy = sum(by_family.values()) or 1e-12
    parts = [(f, c, (1 - p["idle_fraction"]) * by_family.get(f, 0.0) / busy)
             for f, c, _ in FAMILIES]
    return parts + [(IDLE[0], IDLE[1], p["idle_fraction"])]
