"""Report section: load imbalance per scope, related to the work counters the application reports,
with the efficiency-adjusted figures when it sets an "efficiency" counter (seeds/000, chapter 4)."""

from __future__ import annotations

from html import escape
from typing import Any

from ... import units
from ...imbalance import analyze
from . import Context, Figure, Section, legend, name_html, section
from . import sortable_td as td

LOAD_COLOR, ADJ_COLOR, WORK_COLOR = "#5b8db8", "#2e7d4f", "#1d2430"


def _analysis(ctx: Context) -> Any:
    """The imbalance analysis of the run, computed once per report."""
    return ctx.once("imbalance", lambda: analyze(ctx.run))


def _r(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


SVG_MAX_RANKS = 256


def _norm(vals: list[float | None]) -> list[float | None]:
    got = [v for v in vals if v is not None]
    m = sum(got) / len(got) if got else 0.0
    return [(v / m) if v is not None and m > 0 else None for v in vals]


def _svg_chart(a: Any, whole: Any) -> str:
    """Per rank, load (and adjusted load) and work, each relative to its mean: the seed's Fig. 4.7,
    as inline SVG (static, no script)."""
    if not a.work_counters and whole.adjusted is None:
        return ""  # load alone per rank is the "Time per rank" chart already
    if a.nranks > SVG_MAX_RANKS:
        return f'<p class="note">The per-rank chart is drawn up to {SVG_MAX_RANKS} ranks (PNG: --png).</p>'
    series = [("time outside MPI", LOAD_COLOR, _norm(whole.load.values))]
    if whole.adjusted is not None:
        series.append(("adjusted (x efficiency)", ADJ_COLOR, _norm(whole.adjusted.values)))
    work = _norm(whole.work[a.work_counters[0]]) if a.work_counters else None
    top = max([v for _, _, vals in series for v in vals if v is not None] + [v for v in (work or []) if v is not None]
              + [1.0])
    w, h, left, bottom = 900, 220, 40, 20
    slot = (w - left) / a.nranks
    bar = slot * 0.8 / len(series)

    def y(v: float) -> float:
        return (h - bottom) * (1 - v / (top * 1.05))
    out = [f'<svg width="100%" viewBox="0 0 {w} {h}" role="img" style="max-width:{w}px">',
           f'<line x1="{left}" x2="{w}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" stroke="#999" stroke-dasharray="3,3"/>',
           f'<text x="{left - 4}" y="{y(1.0) + 4:.1f}" font-size="11" text-anchor="end" fill="#5b6472">mean</text>']
    for r in range(a.nranks):
        x0 = left + r * slot + slot * 0.1
        for k, (name, color, vals) in enumerate(series):
            v = vals[r]
            if v is None:
                continue
            out.append(f'<rect x="{x0 + k * bar:.1f}" y="{y(v):.1f}" width="{max(bar - 1, 0.5):.1f}" '
                       f'height="{h - bottom - y(v):.1f}" fill="{color}"><title>rank {r}: {escape(name)} '
                       f"{v:.2f} x mean</title></rect>")
        if work and work[r] is not None:
            out.append(f'<circle cx="{x0 + slot * 0.4:.1f}" cy="{y(work[r]):.1f}" r="4" fill="{WORK_COLOR}">'
                       f"<title>rank {r}: work ({escape(a.work_counters[0])}) {work[r]:.2f} x mean</title></circle>")
        if a.nranks <= 32:
            out.append(f'<text x="{x0 + slot * 0.4:.1f}" y="{h - 5}" font-size="11" text-anchor="middle" '
                       f'fill="#5b6472">{r}</text>')
    out.append("</svg>")
    keys = legend((n, c) for n, c, _ in series)
    if work:
        keys += f'<span><i style="background:{WORK_COLOR};border-radius:5px"></i>work ({escape(a.work_counters[0])})</span>'
    return (f'<p class="note">Whole run, per rank, each relative to its mean across ranks (hover for values):</p>'
            f'<div class="legend">{keys}</div>' + "".join(out))


@section
class ImbalanceSection(Section):
    """Load imbalance across ranks, for the whole run and per region (mpilens.imbalance)."""

    id, title, order = "imbalance", "Load imbalance", 75

    def html(self, ctx: Context) -> str | None:
        a = _analysis(ctx)
        scopes = [s for s in a.scopes if s.quantity == "load"]
        if not scopes or a.nranks < 2:
            return None
        adjusted = any(s.adjusted is not None for s in scopes)
        head = ["Scope", "Mean", "Max", "Imbalance", "Max/mean", "Slowest rank", "vs others"]
        head += [f"r({escape(w)})" for w in a.work_counters]
        if adjusted:
            head += ["Adjusted imbalance", "Adj. slowest"] + [f"adj. r({escape(w)})" for w in a.work_counters]
        rows = []
        for s in scopes:
            ld = s.load
            cells = [f'<td class="l">{name_html(s.name)}</td>', td(ld.mean, units.seconds(ld.mean)),
                     td(ld.max, units.seconds(ld.max)), td(ld.imbalance, units.percent(ld.imbalance)),
                     td(ld.max_over_mean, "n/a" if ld.max_over_mean is None else f"{ld.max_over_mean:.2f}"),
                     td(ld.max_rank, str(ld.max_rank)),
                     td(ld.excess, "n/a" if ld.excess is None else f"+{units.percent(ld.excess)}")]
            cells += [td(s.correlation.get(w), _r(s.correlation.get(w))) for w in a.work_counters]
            if adjusted:
                if s.adjusted is not None:
                    cells += [td(s.adjusted.imbalance, units.percent(s.adjusted.imbalance)),
                              td(s.adjusted.max_rank, str(s.adjusted.max_rank))]
                    cells += [td(s.adjusted_correlation.get(w), _r(s.adjusted_correlation.get(w)))
                              for w in a.work_counters]
                else:
                    cells += ["<td></td>"] * (2 + len(a.work_counters))
            rows.append("<tr>" + "".join(cells) + "</tr>")
        whole = scopes[0]
        notes = "".join(f"<li>{escape(n)}</li>" for n in a.notes)
        work = (f"Work counters: {escape(', '.join(a.work_counters))}; r is the Pearson correlation over ranks of "
                "load and work." if a.work_counters else
                "No work counter was recorded: report each rank's work with mpilens_counter_add(\"atoms\", n) to "
                "relate it to time.")
        eff = (f" Adjusted load = load &times; the rank's efficiency (counter "
               f"<code>{escape(a.efficiency_counter or '')}</code>), as in seeds/000 Eq. 4.4." if adjusted else "")
        return (f'<p class="note">Load = time outside MPI per rank (for a region: its time minus the MPI time inside '
                f"it). Imbalance = (max &minus; mean) / mean; &ldquo;vs others&rdquo; = how much longer the slowest "
                f"rank took than the median of the other ranks. {work}{eff}</p>"
                + (f'<ul class="problems">{notes}</ul>' if notes else "")
                + '<div style="overflow-x:auto"><table class="ml-sortable" id="imbalance-table"><thead><tr>'
                + "".join(f"<th>{h}</th>" for h in head) + f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
                + _svg_chart(a, whole))

    def figures(self, ctx: Context) -> list[Figure]:
        a = _analysis(ctx)
        scopes = [s for s in a.scopes if s.quantity == "load"]
        if not scopes or a.nranks < 2:
            return []
        whole = scopes[0]
        if not a.work_counters and whole.adjusted is None:
            return []  # load alone per rank is ranks.png already

        def draw(fig: Any) -> None:
            # the seed's Fig. 4.7: per rank, load and work, each normalized to its mean
            ax = fig.add_subplot()
            ranks = list(range(a.nranks))

            def norm(vals: list[float | None]) -> list[float]:
                return [float("nan") if v is None else v for v in _norm(vals)]
            width = 0.4 if whole.adjusted is not None else 0.8
            ax.bar([r - (width / 2 if whole.adjusted is not None else 0) for r in ranks], norm(whole.load.values),
                   width=width, color=LOAD_COLOR, label="time outside MPI")
            if whole.adjusted is not None:
                ax.bar([r + width / 2 for r in ranks], norm(whole.adjusted.values), width=width, color=ADJ_COLOR,
                       label="adjusted (x efficiency)")
            for w in a.work_counters[:1]:
                ax.plot(ranks, norm(whole.work[w]), "o", color=WORK_COLOR, label=f"work ({w})")
            ax.axhline(1.0, color="#999", lw=0.8, ls="--")
            if a.nranks <= 32:
                ax.set_xticks(ranks)
            ax.set_xlabel("rank")
            ax.set_ylabel("relative to the mean")
            ax.set_title("Load per rank (whole run)")
            ax.legend()
        return [Figure("imbalance", draw)]
