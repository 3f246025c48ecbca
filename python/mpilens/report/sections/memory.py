"""Report section of memory mode: MPI's memory against the application's over time (per rank and
for the job), the peak table, and MPI memory by function. Charts are inline SVG (no script)."""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np

from ...units import mib as fmt_mib
from ...units import mib_mean_std
from . import Context, Figure, Section, name_html, section

MPI_COLOR, APP_COLOR, TOTAL_COLOR = "#c8553d", "#5b8db8", "#444"
RANK_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
               "#17becf"]
MAX_RANK_LINES = 64


def memory_of(ctx: Context):
    """The run's MemoryRun, loaded once per report (None without memory data)."""
    def read():
        return ctx.run.memory if "memory" in ctx.run.modes else None
    return ctx.once("memory", read)


def _svg_lines(series: list[tuple[str, str, np.ndarray, np.ndarray]], title: str, width: int = 900,
               height: int = 220) -> str:
    """An SVG line chart: series of (label, colour, t in s, bytes)."""
    left, right, top, bottom = 58, 10, 18, 26
    xs = [s[2] for s in series if len(s[2])]
    ys = [s[3] for s in series if len(s[3])]
    if not xs:
        return ""
    tmax = max(float(x.max()) for x in xs) or 1.0
    ymax = max(float(y.max()) for y in ys)
    ymin = min(0.0, min(float(y.min()) for y in ys))
    span = (ymax - ymin) or 1.0
    w, h = width - left - right, height - top - bottom

    def px(t: np.ndarray, v: np.ndarray) -> str:
        x = left + t / tmax * w
        y = top + (1 - (v - ymin) / span) * h
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y))

    out = [f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{escape(title)}" '
           'style="max-width:100%;font:11px sans-serif">', f'<text x="{left}" y="12">{escape(title)}</text>']
    for k in range(5):
        v = ymin + span * k / 4
        y = top + (1 - k / 4) * h
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                   f'<text x="2" y="{y + 4:.1f}" fill="#555">{v / 2**20:.1f} MiB</text>')
    for k in range(6):
        x = left + w * k / 5
        out.append(f'<text x="{x:.1f}" y="{height - 8}" fill="#555" text-anchor="middle">{tmax * k / 5:.2f} s</text>')
    for label, color, t, v in series:
        if len(t):
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{px(t, v)}">'
                       f"<title>{escape(label)}</title></polyline>")
    out.append("</svg>")
    return "".join(out)


def _pm(row: dict[str, Any]) -> str:
    return mib_mean_std(row)


@section
class MemorySection(Section):
    """Memory mode: MPI's memory against the application's, over time and at peak."""

    id, title, order = "memory", "Memory: MPI and application", 40

    def html(self, ctx: Context) -> str | None:
        run = memory_of(ctx)
        if run is None:
            return None
        peaks = {r["series"]: r for r in run.peaks()}
        agg = run.aggregate()
        out = [f'<p class="note">Method <b>{escape(run.method)}</b>, {len(run.ranks)} of {run.nranks} ranks. '
               "MPI's part starts with the residency change inside MPI_Init; then "
               + ("allocations and mappings made inside MPI calls (residency sampled by a timer)."
                  if run.method == "fast" else "the PSS change inside every MPI call (memnesia).")
               + " Application = process &minus; MPI; the tool's own memory is left out.</p>"]
        if run.problems:
            out.append('<ul class="problems">' + "".join(f"<li>{escape(p)}</li>" for p in run.problems) + "</ul>")
        out.append("<h3>Peak memory per process (mean ± std over ranks, MiB)</h3><table><thead><tr><th></th>"
                   "<th>PSS</th><th>RSS</th></tr></thead><tbody>"
                   f'<tr><td class="l">MPI</td><td>{_pm(peaks["mpi"])}</td><td>{_pm(peaks["mpi_rss"])}</td></tr>'
                   f'<tr><td class="l">application</td><td>{_pm(peaks["app"])}</td><td></td></tr>'
                   f'<tr><td class="l">total</td><td>{_pm(peaks["pss"])}</td><td>{_pm(peaks["rss"])}</td></tr>'
                   f'<tr><td class="l">tool (left out)</td><td>{_pm(peaks["tool"])}</td><td></td></tr></tbody></table>')
        out.append('<div class="legend">'
                   f'<span><i style="background:{MPI_COLOR}"></i>MPI</span>'
                   f'<span><i style="background:{APP_COLOR}"></i>application</span>'
                   f'<span><i style="background:{TOTAL_COLOR}"></i>total</span></div>')
        out.append(_svg_lines([("MPI", MPI_COLOR, agg["t"], agg["mpi"]), ("application", APP_COLOR, agg["t"], agg["app"]),
                               ("total", TOTAL_COLOR, agg["t"], agg["pss"])], "Job (sum over ranks), PSS"))
        shown = run.ranks[:MAX_RANK_LINES]
        out.append(_svg_lines([(f"rank {r.rank}", RANK_COLORS[i % len(RANK_COLORS)], r.t, r.mpi)
                               for i, r in enumerate(shown)], "MPI memory per rank"))
        out.append(_svg_lines([(f"rank {r.rank}", RANK_COLORS[i % len(RANK_COLORS)], r.t, r.pss)
                               for i, r in enumerate(shown)], "Total memory per rank (PSS)"))
        rows = run.by_function()[:15]
        if rows:
            smaps = run.method == "smaps"
            head = ("<th>PSS grown</th><th>PSS shrunk</th>" if smaps else "") + \
                "<th>Allocated</th><th>Freed</th><th>Net</th><th>Blocks</th>"
            body = "".join(
                f'<tr><td class="l">{escape(r["function"])}</td>'
                + (f'<td data-v="{r["pss_grown"]}">{fmt_mib(r["pss_grown"])}</td>'
                   f'<td data-v="{r["pss_shrunk"]}">{fmt_mib(r["pss_shrunk"])}</td>' if smaps else "")
                + f'<td data-v="{r["allocated"]}">{fmt_mib(r["allocated"])}</td><td data-v="{r["freed"]}">'
                f'{fmt_mib(r["freed"])}</td><td data-v="{r["net"]}">{fmt_mib(r["net"])}</td>'
                f'<td data-v="{r["allocations"]}">{r["allocations"]}</td></tr>' for r in rows)
            out.append("<h3>MPI memory by function (sum over ranks, MiB)</h3>"
                       f'<table class="ml-sortable" id="memory-functions"><thead><tr><th>Function</th>{head}</tr>'
                       f"</thead><tbody>{body}</tbody></table>")
        ext = run.extents()
        if ext:
            body = "".join(
                f'<tr><td class="l">{name_html(e["name"] if e["kind"] == "region" else "Pcontrol " + e["name"])}</td>'
                f'<td>{e["instances"]}</td><td>{fmt_mib(e["total_change"])}</td><td>{fmt_mib(e["mpi_change"])}</td>'
                f'<td>{fmt_mib(e["app_change"])}</td><td>{fmt_mib(e["mpi_peak"])}</td></tr>' for e in ext)
            out.append("<h3>Regions and MPI_Pcontrol extents (change within, mean over ranks, MiB)</h3>"
                       "<table><thead><tr><th>Extent</th><th>Instances</th><th>Total</th><th>MPI</th>"
                       f"<th>Application</th><th>MPI peak</th></tr></thead><tbody>{body}</tbody></table>")
        return "\n".join(out)

    def figures(self, ctx: Context) -> list[Figure]:
        run = memory_of(ctx)
        if run is None:
            return []
        agg = run.aggregate()

        def draw_job(fig: Any) -> None:
            ax = fig.add_subplot()
            ax.plot(agg["t"], agg["pss"] / 2**20, color=TOTAL_COLOR, label="total")
            ax.plot(agg["t"], agg["app"] / 2**20, color=APP_COLOR, label="application")
            ax.plot(agg["t"], agg["mpi"] / 2**20, color=MPI_COLOR, label="MPI")
            ax.set_xlabel("seconds since MPI_Init")
            ax.set_ylabel("MiB (PSS, sum over ranks)")
            ax.set_title(f"Memory of the job ({run.method})")
            ax.legend()

        def draw_ranks(fig: Any) -> None:
            a1, a2 = fig.subplots(1, 2, sharex=True)
            for i, r in enumerate(run.ranks[:MAX_RANK_LINES]):
                c = RANK_COLORS[i % len(RANK_COLORS)]
                a1.plot(r.t, r.mpi / 2**20, color=c, lw=0.8)
                a2.plot(r.t, r.pss / 2**20, color=c, lw=0.8)
            a1.set_title("MPI per rank")
            a2.set_title("total per rank (PSS)")
            for ax in (a1, a2):
                ax.set_xlabel("seconds since MPI_Init")
            a1.set_ylabel("MiB")

        return [Figure("memory-job", draw_job), Figure("memory-ranks", draw_ranks)]
