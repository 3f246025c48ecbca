"""Report section "Call sites": which line of the application makes the expensive MPI calls, in
the spirit of mpiP's call-site tables. Each site (MPI function at one location, or one call path
with MPILENS_CALLSITE_DEPTH > 1) with its calls, time and bytes, per-rank min/mean/max and the
rank of the max; then each top function's heaviest sites. Symbolised at analysis time
(mpilens.callsites)."""

from __future__ import annotations

import os
from html import escape
from typing import Any

from ... import units
from ..._layout import ProfileKeys
from ...callsites import OTHER, callsites, location
from ...summary import spread
from . import Context, Section, name_html, section, text_table

TOP = 20  # text report: sites listed
PER_FUNCTION = 3  # text report: heaviest sites named per top function
MAX_BARS = 64  # HTML: per-rank bars of a site, in blocks of ranks beyond this


def sites(ctx: Context) -> list[dict[str, Any]]:
    """The run's symbolised call sites (computed once per report)."""
    return ctx.once("callsites", lambda: callsites(ctx.run))


def _mpi_total(ctx: Context) -> float:
    return sum(f.time.total for f in ctx.summary.functions if f.time is not None) or 0.0


def _where(s: dict[str, Any]) -> str:
    """file:line, or the module when the binary has no line information."""
    if s.get("file") and s.get("line"):
        return location(s)
    return os.path.basename(s["module"]) if s.get("module") else OTHER


def _short(symbol: str | None, width: int = 48) -> str:
    """A symbol for the text table: long C++ signatures lose their parameters."""
    if not symbol:
        return ""
    if len(symbol) > width and "(" in symbol:
        symbol = symbol[:symbol.index("(")] + "(...)"
    return symbol if len(symbol) <= width + 8 else symbol[:width + 5] + "..."


@section
class CallSitesSection(Section):
    """MPI call sites by time, with per-rank spread, and the heaviest sites of the top functions."""

    id, title, order = "callsites", "Call sites", 45

    def text(self, ctx: Context) -> list[str] | None:
        ss = sites(ctx)
        if not ss:
            return None
        total = _mpi_total(ctx)
        out = ["@ Call sites by time (aggregate over ranks; min/mean/max = per-rank time)"]
        rows = []
        for i, s in enumerate(ss[:TOP], 1):
            t = spread(s["time_s"])
            calls = spread(s["calls"])
            rows.append([str(i), s["mpi_function"], _where(s), _short(s["symbol"]), units.count(calls.total if calls else None),
                         units.seconds(t.total if t else None),
                         units.percent(t.total / total if t and total > 0 else None),
                         units.size(sum(v or 0 for v in s["bytes_sent"])), units.size(sum(v or 0 for v in s["bytes_recv"])),
                         units.seconds(t.min if t else None), units.seconds(t.mean if t else None),
                         units.seconds(t.max if t else None), str(t.max_rank) if t else "n/a"])
        out += text_table(["Site", "Function", "Location", "Symbol", "Calls", "Time", "MPI%", "Sent", "Received",
                           "Min", "Mean", "Max", "MaxRank"], rows, {0, 4, 5, 6, 7, 8, 9, 10, 11, 12})
        if len(ss) > TOP:
            out.append(f"({len(ss) - TOP} more sites in --json and --html)")
        if any("path" in s for s in ss[:TOP]):
            out += ["", "@ Call paths of the top sites (from the MPI call outwards)"]
            for i, s in enumerate(ss[:TOP], 1):
                frames = " <- ".join(_short(f["symbol"]) + (f" ({location(f)})" if f.get("line") else "")
                                     for f in s.get("path", []))
                out.append(f"{i:>4}  {s['mpi_function']}: {frames or OTHER}")
        ids = {id(s): i for i, s in enumerate(ss, 1)}
        rows = []
        for f in ctx.summary.functions[:10]:
            mine = [s for s in ss if s["mpi_function"] == f.name]
            ftime = f.time.total if f.time else 0.0
            for s in mine[:PER_FUNCTION]:
                t = sum(v or 0 for v in s["time_s"])
                rows.append([f.name, str(ids[id(s)]), _where(s), _short(s["symbol"]),
                             units.percent(t / ftime if ftime > 0 else None)])
        if rows:
            out += ["", "@ Heaviest call sites of the top functions (share of the function's time)"]
            out += text_table(["Function", "Site", "Location", "Symbol", "Share"], rows, {1, 4})
        return out

    def json(self, ctx: Context) -> dict[str, Any] | None:
        ss = sites(ctx)
        if not ss and not (ctx.run.profile or {}).get(ProfileKeys.CALLSITES) == []:
            return None
        return {"callsites": ss}

    def html(self, ctx: Context) -> str | None:
        ss = sites(ctx)
        if not ss:
            return None
        total = _mpi_total(ctx)
        rows = []
        for i, s in enumerate(ss, 1):
            t = spread(s["time_s"])
            calls = sum(v or 0 for v in s["calls"])
            rows.append(
                f'<tr><td data-v="{i}">{i}</td><td class="l">{escape(s["mpi_function"])}</td>'
                f'<td class="l" title="{escape(s.get("file") or "")}">{escape(_where(s))}</td>'
                f'<td class="l">{name_html(s["symbol"] or "")}</td>'
                f'<td data-v="{calls}">{units.count(calls)}</td>'
                f'<td data-v="{t.total if t else ""}">{units.seconds(t.total if t else None)}</td>'
                f'<td data-v="{t.total / total if t and total > 0 else ""}">'
                f'{units.percent(t.total / total if t and total > 0 else None)}</td>'
                f'<td data-v="{t.max if t else ""}">{units.seconds(t.max if t else None)}</td>'
                f'<td data-v="{t.max_rank if t else ""}">{t.max_rank if t else "n/a"}</td>'
                f'<td data-v="{t.max_over_mean if t else ""}">{f"{t.max_over_mean:.2f}" if t else "n/a"}</td>'
                f'<td>{_bars(s["time_s"])}</td></tr>')
        head = "".join(f"<th>{h}</th>" for h in ["Site", "Function", "Location", "Symbol", "Calls", "Time", "MPI%",
                                                 "Max/rank", "Max rank", "Max/mean", "Time per rank"])
        return ('<p class="note">Each MPI function at each place of the program that calls it (symbolised from '
                'the executable and libraries). Bars: the site\'s time on each rank. Click a column to sort.</p>'
                f'<div style="overflow-x:auto"><table class="ml-sortable" id="callsites-table"><thead><tr>{head}'
                f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _bars(values: list[float | None]) -> str:
    """A small bar chart of per-rank values (blocks of ranks summed beyond MAX_BARS)."""
    n = len(values)
    block = max(1, -(-n // MAX_BARS))
    groups = [values[i:i + block] for i in range(0, n, block)]
    vals = [None if all(v is None for v in g) else sum(v or 0 for v in g) for g in groups]
    top = max((v for v in vals if v is not None), default=0) or 1
    bars = []
    for i, v in enumerate(vals):
        h = 0 if v is None else max(1, round(20 * v / top))
        who = f"rank {i}" if block == 1 else f"ranks {i * block}-{min(n, (i + 1) * block) - 1}"
        bars.append(f'<span title="{who}: {units.seconds(v)}" style="display:inline-block;width:4px;height:{h}px;'
                    f'background:{"#ccc" if v is None else "#c8553d"};margin-right:1px"></span>')
    return f'<span style="display:inline-flex;align-items:flex-end;height:20px">{"".join(bars)}</span>'
