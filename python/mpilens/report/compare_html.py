"""The HTML page of `mpilens compare --html`: one self-contained file (inline styles and SVG, no
script, no network access) with the comparison tree and, per node, its ratio and confidence
interval drawn on a log scale around 1 (a forest plot), plus the whole-run times of every run."""

from __future__ import annotations

import math
from html import escape

from .. import __version__, units
from ..compare import CompareNode, Comparison, _fmt_p, _fmt_ratio
from .html import _asset
from .sections import name_html

FASTER, SLOWER, SAME = "#2e7d4f", "#b4462c", "#7a8491"
PLOT_W, PLOT_H, SPAN, INSET = 220, 18, 3.0, 6  # forest plot: log2(ratio) from -SPAN to +SPAN


def _pos(v: float) -> float:
    """x of log2(ratio) = v in the plot (clamped to the axis)."""
    v = max(-SPAN, min(SPAN, v))
    return INSET + (v + SPAN) / (2 * SPAN) * (PLOT_W - 2 * INSET)


def _x(ratio: float) -> float:
    if ratio <= 0:
        return _pos(-SPAN)
    if math.isinf(ratio):
        return _pos(SPAN)
    return _pos(math.log2(ratio))


def _color(n: CompareNode) -> str:
    if n.only == "A" or n.verdict == "B faster":
        return FASTER  # B spends no time where A does, or less
    if n.only == "B" or n.verdict == "B slower":
        return SLOWER
    return SAME


def _forest(n: CompareNode) -> str:
    color = _color(n)
    mid = _pos(0.0)
    parts = [f'<svg width="{PLOT_W}" height="{PLOT_H}" viewBox="0 0 {PLOT_W} {PLOT_H}" role="img">',
             f'<line x1="{mid}" y1="0" x2="{mid}" y2="{PLOT_H}" stroke="#c5ccd6" stroke-dasharray="2,2"/>']
    if n.ci is not None:
        lo, hi = _x(n.ci[0]), _x(n.ci[1])
        parts.append(f'<line x1="{lo:.1f}" y1="{PLOT_H / 2}" x2="{hi:.1f}" y2="{PLOT_H / 2}" stroke="{color}" '
                     'stroke-width="2"/>')
    if n.ratio is not None:
        x = _x(n.ratio)
        parts.append(f'<circle cx="{x:.1f}" cy="{PLOT_H / 2}" r="4" fill="{color}"><title>A/B {_fmt_ratio(n.ratio)}'
                     + (f" [{_fmt_ratio(n.ci[0])}, {_fmt_ratio(n.ci[1])}]" if n.ci else "") + "</title></circle>")
    parts.append("</svg>")
    return "".join(parts)


def _axis() -> str:
    ticks = []
    for k in range(-int(SPAN), int(SPAN) + 1):
        x = _pos(float(k))
        label = f"{2 ** k:g}" if k >= 0 else f"1/{2 ** -k:g}"
        anchor = "start" if k == -SPAN else "end" if k == SPAN else "middle"
        ticks.append(f'<text x="{x:.1f}" y="11" font-size="10" text-anchor="{anchor}" fill="#5b6472">{label}</text>')
    return f'<svg width="{PLOT_W}" height="14" viewBox="0 0 {PLOT_W} 14">{"".join(ticks)}</svg>'


def _row(depth: int, n: CompareNode) -> str:
    calls = ""
    if n.kind == "function" and n.calls_a is not None and n.calls_b is not None:
        calls = f"calls/rank {units.count(n.calls_a)} &rarr; {units.count(n.calls_b)}"
    tip = (f"A: mean {units.seconds(n.a.mean)}, min {units.seconds(n.a.min)}, max {units.seconds(n.a.max)}; "
           f"B: mean {units.seconds(n.b.mean)}, min {units.seconds(n.b.min)}, max {units.seconds(n.b.max)}")
    ci = "" if n.ci is None else f"[{_fmt_ratio(n.ci[0])}, {_fmt_ratio(n.ci[1])}]"
    verdict = n.verdict if n.significant else ""
    color = _color(n)
    style = f' style="padding-left:{8 + 18 * depth}px"'
    kind = {"region": "region", "function": "MPI", "run": ""}.get(n.kind, "")
    return (f'<tr title="{escape(tip)}"><td class="l"{style}>{name_html(n.name)} <span class="k">{kind}</span></td>'
            f"<td>{units.seconds(n.a.median)}</td><td>{units.seconds(n.b.median)}</td>"
            f"<td>{units.percent(n.a.cv)}</td><td>{units.percent(n.b.cv)}</td>"
            f'<td>{("+" if n.impact > 0 else "") + units.seconds(n.impact)}</td>'
            f"<td><b>{_fmt_ratio(n.ratio)}</b></td><td>{ci}</td><td>{_fmt_p(n.p)}</td><td>{_forest(n)}</td>"
            f'<td class="l" style="color:{color}">{escape(verdict)}</td><td class="l k">{calls}</td></tr>')


def _strip(c: Comparison) -> str:
    """Wall time of every run of both sides as dots on one axis."""
    wall = c.whole[0] if c.whole else None
    if wall is None:
        return ""
    values = wall.a_values + wall.b_values
    lo, hi = min(values), max(values)
    if hi <= lo:
        hi = lo + 1e-9
    w, h, pad = 640, 64, 40
    log = lo > 0 and hi / lo > 5  # an outlier run would squeeze the others into one spot

    def x(v: float) -> float:
        if log:
            return pad + math.log(v / lo) / math.log(hi / lo) * (w - 2 * pad)
        return pad + (v - lo) / (hi - lo) * (w - 2 * pad)
    dots = []
    for row, (label, vals, color) in enumerate((("A", wall.a_values, "#5b8db8"), ("B", wall.b_values, "#c8553d"))):
        y = 16 + row * 24
        dots.append(f'<text x="4" y="{y + 4}" font-size="12" fill="#1d2430">{label}</text>')
        for v in vals:
            dots.append(f'<circle cx="{x(v):.1f}" cy="{y}" r="4" fill="{color}" fill-opacity="0.7">'
                        f"<title>{units.seconds(v)}</title></circle>")
    dots.append(f'<text x="{pad}" y="{h - 2}" font-size="10" fill="#5b6472">{units.seconds(lo)}</text>')
    dots.append(f'<text x="{w - pad}" y="{h - 2}" font-size="10" text-anchor="end" fill="#5b6472">'
                f"{units.seconds(hi)}{' (log scale)' if log else ''}</text>")
    return f'<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">{"".join(dots)}</svg>'


def render(c: Comparison) -> str:
    """Return the comparison page."""
    head = ("<tr><th>Node</th><th>A median</th><th>B median</th><th>A cv</th><th>B cv</th><th>B&minus;A</th>"
            f"<th>A/B</th><th>{c.confidence:.0%} CI</th><th>p</th><th>{_axis()}</th><th></th><th></th></tr>")
    rows = ['<tr class="group"><td class="l" colspan="12">Whole run</td></tr>']
    rows += [_row(d, n) for top in c.whole for d, n in top.walk()]
    if c.regions:
        rows.append('<tr class="group"><td class="l" colspan="12">Regions &rarr; MPI functions</td></tr>')
        rows += [_row(d, n) for top in c.regions for d, n in top.walk()]
    sides = []
    for s in (c.a, c.b):
        runs = ", ".join(escape(p) for p in s.paths[:4]) + (f" &hellip; ({len(s.paths)} runs)" if len(s.paths) > 4 else "")
        excl = "".join(f"<li>left out {escape(p)}: {escape(w)}</li>" for p, w in s.excluded)
        sides.append(f"<p><b>{s.label}</b> ({'baseline' if s is c.a else 'experimental'}, {len(s.runs)} runs): "
                     f"{escape(s.description())}<br><span class='k'>{runs}</span></p>"
                     + (f'<ul class="problems">{excl}</ul>' if excl else ""))
    method = (f"Each node's value in one run is its time per rank ({escape(c.ranks)} over ranks; the wall time is "
              "the slowest rank's). Ratio = median(A) / median(B) over runs: above 1 B is faster, below 1 B is slower. "
              f"The interval is a {c.confidence:.0%} percentile bootstrap over runs ({c.resamples} resamples, seed "
              f"{c.seed}); p is the two-sided Mann-Whitney U test. Green and red mark intervals that exclude 1. "
              "Children are sorted by their impact |median(B) &minus; median(A)|. Hover a row for mean, min and max.")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>mpilens compare: {len(c.a.runs)} vs {len(c.b.runs)} runs</title>
<style>{_asset("report.css")}
tr.group td {{ background: #f1f3f6; font-weight: 600; }}
.k {{ color: var(--muted); font-size: 11px; }}
td svg {{ vertical-align: middle; }}
</style>
</head>
<body>
<header><h1>mpilens compare: A ({len(c.a.runs)} runs) vs B ({len(c.b.runs)} runs)</h1>
<div class="sub">mpilens {escape(__version__)}</div></header>
<main>
<section id="sides"><h2>Runs</h2>{"".join(sides)}
<p class="note">Wall time of each run (slowest rank):</p>{_strip(c)}</section>
<section id="tree"><h2>Comparison tree</h2>
<p class="note">{method}</p>
<div style="overflow-x:auto"><table class="tree" id="compare-table"><thead>{head}</thead>
<tbody>{"".join(rows)}</tbody></table></div></section>
</main>
</body>
</html>
"""
