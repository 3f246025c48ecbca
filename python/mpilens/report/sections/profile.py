"""Report sections of profile mode: summary, findings, time per rank, top functions,
communication matrix, message sizes, regions, and the run's settings (JSON only). The text report
is laid out in the spirit of mpiP: MPI time per rank, top functions by time and by bytes with their
spread across ranks, message sizes, top talkers, regions, findings."""

from __future__ import annotations

import math
import shlex
from html import escape
from pathlib import Path
from typing import Any

from ... import units
from ..._layout import ProfileKeys, ToolKeys
from ...summary import Talker
from . import Context, Figure, Section, name_html, section, text_table

MATRIX_MAX_CELLS = 256  # matrices of more ranks are shown in blocks of ranks
MPI_COLOR, COMPUTE_COLOR = "#c8553d", "#5b8db8"
MAX_RANK_ROWS = 16  # text report: ranks listed in full up to this many
TOP = 20  # text report: functions listed


def _share(part: float, whole: float) -> float | None:
    """part of whole, or None (shown "n/a") when whole is 0: a run whose ranks left no time (their
    statistics lost to a full file system) has no share to show."""
    return part / whole if whole else None


def _num(v: Any, text: str) -> str:
    return f'<td data-v="{"" if v is None else v}">{escape(text)}</td>'


def _command(ctx: Context) -> str:
    cmd = (ctx.run.meta or {}).get("command")
    # shell-quoted, its bytes that are not text escaped: one line a user can read and copy
    return " ".join(shlex.quote(units.printable(str(a), controls=True)) for a in cmd) if isinstance(cmd, list) else "n/a"


def _mpi(ctx: Context) -> str:
    lib = ((ctx.run.meta or {}).get("mpi") or {}).get("library", "")
    return lib.splitlines()[0].strip() if lib else (ctx.run.profile.get(ProfileKeys.TOOL) or {}).get(ToolKeys.MPI, "n/a")


def spread(x: Any) -> dict[str, Any] | None:
    """A Spread (statistics across ranks) as the JSON report gives it."""
    return None if x is None else {"total": x.total, "mean": x.mean, "min": x.min, "max": x.max,
                                   "min_rank": x.min_rank, "max_rank": x.max_rank, "cov": x.cov}


def compute_times(ctx: Context) -> list[float | None]:
    """Per-rank time outside MPI (wall - MPI): the load of each rank."""
    return [None if r.wall is None or r.mpi is None else max(r.wall - r.mpi, 0.0) for r in ctx.summary.ranks]


def _unmeasured(missed: list[dict[str, str]]) -> str:
    """"MPIX_Foo, PMPI_Bar (called by app past mpilens: ...)", grouped by object."""
    by_object: dict[str, list[str]] = {}
    for u in missed:
        by_object.setdefault(u["object"], []).append(u["name"])
    return "; ".join(f"{', '.join(names)} (called by {Path(obj).name})" for obj, names in by_object.items()) \
        + " - these calls are in no statistic"


def tool_sentence(tool: dict[str, Any]) -> str:
    """What another MPI tool in the job means for the profile (docs/tools.md)."""
    name, n = Path(tool["object"]).name, len(tool["functions"])
    what = f"{n} MPI function{'s' if n != 1 else ''}"
    if tool["position"] == "after":
        return f"{name} was loaded after mpilens: every call of its {what} went on to it once measured"
    return (f"{name} was loaded before mpilens and wraps {what}: mpilens measured the program's calls through "
            f"the PMPI_ calls {name} passes on, its own calls left out; every call took mpilens' slower general "
            f"path, and the call sites of those {n} functions are not the program's (load mpilens first, as "
            "`mpilens run` does, for both)")


@section
class SummarySection(Section):
    """The run at a glance: headline figures (HTML), the report's head (text), the run's figures (JSON)."""

    id, title, order = "summary", "Summary", 10

    def html(self, ctx: Context) -> str:
        s = ctx.summary
        load = [v for v in compute_times(ctx) if v is not None]
        mean = sum(load) / len(load) if load else 0.0
        imbalance = (max(load) - mean) / mean if load and mean > 0 else None
        share = s.mpi.total / s.wall.total if s.mpi and s.wall and s.wall.total else None
        hosts = {r.host for r in s.ranks if r.host}
        top = s.functions[0] if s.functions else None
        cards = [
            ("Wall time (slowest rank)", units.seconds(s.wall.max if s.wall else None)),
            ("Time in MPI", units.percent(share)),
            ("Ranks", f"{s.nranks} on {len(hosts)} host{'s' if len(hosts) != 1 else ''}"),
            ("Load imbalance (compute)", units.percent(imbalance)),
            ("Top MPI function", f"{top.name} {units.percent(top.share_of_mpi)}" if top else "none"),
            ("Bytes moved (p2p matrix)", units.size(sum(m.bytes for m in s.talkers))),
        ]
        out = ['<div class="cards">']
        out += [f'<div class="card"><div class="k">{escape(k)}</div><div class="v">{escape(v)}</div></div>'
                for k, v in cards]
        out.append("</div>")
        out.append('<p class="note">Load imbalance = (max &minus; mean) / mean of the time each rank spends '
                   "outside MPI (its compute), the usual formula; MPI share = MPI time summed over ranks / wall "
                   "time summed over ranks.</p>")
        if s.sampling:
            out.append(f'<p class="note">Timing: {escape(s.sampling.sentence())}.</p>')
        missed = ctx.run.unmeasured
        if missed:
            out.append(f'<p class="note">Not measured: {escape(_unmeasured(missed))}.</p>')
        for tool in ctx.run.tools:
            out.append(f'<p class="note">Other MPI tool: {escape(tool_sentence(tool))}.</p>')
        if ctx.run.problems:
            out.append('<ul class="problems">' + "".join(f"<li>{escape(p)}</li>" for p in ctx.run.problems) + "</ul>")
        return "\n".join(out)

    def text(self, ctx: Context) -> list[str]:
        run, s = ctx.run, ctx.summary
        out: list[str] = []
        hosts = {r.host for r in s.ranks if r.host}
        out.append(f"mpilens report: {run.path}")
        out.append(f"Command   : {_command(ctx)}")
        out.append(f"MPI       : {_mpi(ctx)}")
        out.append(f"Ranks     : {s.nranks} on {len(hosts)} host{'s' if len(hosts) != 1 else ''}"
                   + ("" if run.complete or run.snapshot is not None
                      else f"  (INCOMPLETE: data from {s.measured_ranks} ranks)"))
        if s.wall and s.mpi:
            out.append(f"Wall time : {units.seconds(s.wall.max)} (slowest rank), MPI time "
                       f"{units.percent(_share(s.mpi.total, s.wall.total))} of the total")
        if s.sampling:
            out.append(f"Timing    : {s.sampling.sentence()}")
        for c in (run.meta or {}).get("cvars_set") or []:  # MPI_T cvars mpilens set (see `mpilens mpit`)
            where = f" when communicator {c['communicator']!r} was named" if c.get("communicator") else ""
            new = c.get("new") if c.get("new") is not None else "not applied"
            out.append(f"MPI_T cvar: {c.get('name')} {c.get('old')} -> {new}{where}")
        missed = run.unmeasured
        if missed:
            out.append(f"Not measured: {_unmeasured(missed)}")
        for tool in run.tools:
            out.append(f"Tool      : {tool_sentence(tool)}")
        for p in run.problems:
            out.append(f"Note      : {p}")
        return out

    def json(self, ctx: Context) -> dict[str, Any]:
        run, s = ctx.run, ctx.summary
        missed = run.unmeasured  # first: a damaged imports.json is one of the problems
        return {
            "run": str(run.path),
            "complete": run.complete,
            "snapshot": run.snapshot,  # N for `--snapshot N`: the statistics as of MPI_Pcontrol(3|4) number N
            "problems": run.problems,
            # MPI functions the program or its libraries call past mpilens (imports.json)
            "unmeasured_functions": missed,
            # other MPI tools the calls passed through (meta.json): object, position, functions
            "tools": run.tools,
            "nranks": s.nranks,
            "measured_ranks": s.measured_ranks,
            "wall_time_s": spread(s.wall),
            "mpi_time_s": spread(s.mpi),
            "mpi_share": (s.mpi.total / s.wall.total) if s.mpi and s.wall and s.wall.total else None,
        }


@section
class FindingsSection(Section):
    """What stands out in the profile, worst first."""

    id, title, order = "findings", "Findings", 20
    text_order = json_order = 90  # after the tables

    def html(self, ctx: Context) -> str:
        if not ctx.findings:
            return "<p>Nothing stands out.</p>"
        return "\n".join(f'<div class="finding {escape(f.severity)}"><b>{escape(f.severity)}</b>{escape(f.message)}</div>'
                         for f in ctx.findings)

    def text(self, ctx: Context) -> list[str]:
        out = ["@ Findings"]
        if not ctx.findings:
            out.append("Nothing stands out.")
        out += [f"[{f.severity}] {f.message}" for f in ctx.findings]
        return out

    def json(self, ctx: Context) -> dict[str, Any]:
        return {"findings": [f.to_dict() for f in ctx.findings]}


@section
class RanksSection(Section):
    """Wall time and MPI time of each rank."""

    id, title, order = "ranks", "Time per rank", 30

    def html(self, ctx: Context) -> str:
        s = ctx.summary
        ctx.data["ranks"] = {
            "labels": [str(r.rank) for r in s.ranks],
            "unit": "s",
            "series": [{"name": "MPI", "color": MPI_COLOR, "values": [r.mpi for r in s.ranks]},
                       {"name": "outside MPI", "color": COMPUTE_COLOR, "values": compute_times(ctx)}],
        }
        return (f'<div class="legend"><span><i style="background:{MPI_COLOR}"></i>MPI</span>'
                f'<span><i style="background:{COMPUTE_COLOR}"></i>outside MPI</span></div>'
                '<div data-chart="bars" data-key="ranks"></div>'
                '<p class="note">Wall time of each rank from the end of MPI_Init to MPI_Finalize, split into time '
                "inside MPI calls and the rest. Hover for values.</p>")

    def figures(self, ctx: Context) -> list[Figure]:
        s = ctx.summary

        def draw(fig: Any) -> None:
            ax = fig.add_subplot()
            x = [r.rank for r in s.ranks]
            mpi = [r.mpi or 0 for r in s.ranks]
            ax.bar(x, mpi, color=MPI_COLOR, label="MPI", width=1.0 if len(x) > 64 else 0.8)
            ax.bar(x, [c or 0 for c in compute_times(ctx)], bottom=mpi, color=COMPUTE_COLOR, label="outside MPI",
                   width=1.0 if len(x) > 64 else 0.8)
            ax.set_xlabel("rank")
            ax.set_ylabel("seconds")
            ax.set_title("Time per rank")
            ax.legend()
        return [Figure("ranks", draw)]

    def text(self, ctx: Context) -> list[str]:
        run, s = ctx.run, ctx.summary
        out = ["@ MPI time per rank"]
        ended = not run.complete and run.snapshot is None  # how each rank ended, when not all reached MPI_Finalize
        se = s.sampling is not None  # sampled timing: each rank's MPI time is an estimate, with its standard error
        rows = [[str(r.rank), r.host or "n/a", units.seconds(r.wall), units.seconds(r.mpi), units.percent(r.mpi_share)]
                + ([units.seconds(r.mpi_se)] if se else [])
                + ([r.ended_by or "no data"] if ended else []) for r in s.ranks]
        if len(rows) > MAX_RANK_ROWS:
            keyed = sorted((r for r in s.ranks if r.mpi_share is not None), key=lambda r: -r.mpi_share)  # type: ignore
            keep = {r.rank for r in keyed[:MAX_RANK_ROWS // 2]} | {r.rank for r in keyed[-(MAX_RANK_ROWS // 2):]}
            rows = [row for row, r in zip(rows, s.ranks) if r.rank in keep]
            out.append(f"(the {MAX_RANK_ROWS // 2} ranks with the most and the least MPI time of {s.nranks})")
        if s.wall and s.mpi:
            rows.append(["*", "", units.seconds(s.wall.total), units.seconds(s.mpi.total),
                         units.percent(_share(s.mpi.total, s.wall.total))]
                        + ([units.seconds(s.sampling.mpi_se)] if s.sampling else []) + ([""] if ended else []))
        out += text_table(["Rank", "Host", "Wall", "MPI", "MPI%"] + (["MPI ± (s.e.)"] if se else [])
                          + (["Ended by"] if ended else []), rows, {2, 3, 4, 5} if se else {2, 3, 4})
        return out


@section
class FunctionsSection(Section):
    """MPI functions by time (and, in the text report, by bytes), with their spread across ranks."""

    id, title, order = "functions", "MPI functions", 40

    def html(self, ctx: Context) -> str:
        rows = []
        for f in ctx.summary.functions:
            rows.append(
                f'<tr><td class="l">{escape(f.name)}</td><td class="l">{escape(f.cls)}</td>'
                + _num(f.calls.total, units.count(f.calls.total)) + _num(f.time.total, units.seconds(f.time.total))
                + _num(f.share_of_mpi, units.percent(f.share_of_mpi)) + _num(f.time.min, units.seconds(f.time.min))
                + _num(f.time.mean, units.seconds(f.time.mean)) + _num(f.time.max, units.seconds(f.time.max))
                + _num(f.time.max_rank, str(f.time.max_rank)) + _num(f.time.max_over_mean, f"{f.time.max_over_mean:.2f}")
                + _num(f.sent.total, units.size(f.sent.total)) + _num(f.recv.total, units.size(f.recv.total))
                + _num(f.bytes_per_call, units.size(f.bytes_per_call)) + "</tr>")
        head = "".join(f"<th>{h}</th>" for h in ["Function", "Class", "Calls", "Time", "MPI%", "Min/rank", "Mean/rank",
                                                 "Max/rank", "Max rank", "Max/mean", "Sent", "Received", "Bytes/call"])
        return ('<p class="note">Aggregate over ranks; min/mean/max are per-rank times. Click a column to sort.</p>'
                f'<div style="overflow-x:auto"><table class="ml-sortable" id="functions-table"><thead><tr>{head}'
                f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')

    def figures(self, ctx: Context) -> list[Figure]:
        top = ctx.summary.functions[:12][::-1]
        if not top:
            return []

        def draw(fig: Any) -> None:
            ax = fig.add_subplot()
            ax.barh([f.name for f in top], [f.time.total for f in top], color=MPI_COLOR)
            ax.set_xlabel("seconds (sum over ranks)")
            ax.set_title("Top MPI functions by time")
            fig.tight_layout()
        return [Figure("functions", draw)]

    def text(self, ctx: Context) -> list[str]:
        s = ctx.summary
        out = ["@ Top MPI functions by time (aggregate over ranks; spread = per-rank time)"]
        rows = []
        for f in s.functions[:TOP]:
            rows.append([f.name, f.cls, units.count(f.calls.total), units.seconds(f.time.total),
                         units.percent(f.share_of_mpi), units.percent(f.share_of_wall), units.seconds(f.time.min),
                         units.seconds(f.time.mean), units.seconds(f.time.max), f"{f.time.max_rank}",
                         f"{f.time.max_over_mean:.2f}"])
        out += text_table(["Function", "Class", "Calls", "Time", "MPI%", "Wall%", "Min", "Mean", "Max", "MaxRank",
                           "Max/Mean"], rows, set(range(2, 11)))
        by_bytes = sorted((f for f in s.functions if f.bytes_total > 0), key=lambda f: (-f.bytes_total, f.name))
        if by_bytes:
            out += ["", "@ Top MPI functions by bytes (sent + received, aggregate over ranks)"]
            rows = [[f.name, units.count(f.calls.total), units.size(f.sent.total), units.size(f.recv.total),
                     units.size(f.bytes_per_call), units.size(f.sent.max), f"{f.sent.max_rank}"] for f in by_bytes[:TOP]]
            out += text_table(["Function", "Calls", "Sent", "Received", "Bytes/call", "MaxSent/rank", "Rank"], rows)
        return out

    def json(self, ctx: Context) -> dict[str, Any]:
        return {"functions": [{"name": f.name, "class": f.cls, "calls": f.calls.total, "time_s": spread(f.time),
                               "bytes_sent": f.sent.total, "bytes_recv": f.recv.total, "share_of_mpi": f.share_of_mpi,
                               "imbalance": f.time.imbalance} for f in ctx.summary.functions]}


def matrix_blocks(matrix: list[Talker], nranks: int, max_cells: int = MATRIX_MAX_CELLS) -> dict[str, Any]:
    """Return the matrix as sparse cells, grouped in blocks of ranks when there are many ranks."""
    block = max(1, math.ceil(nranks / max_cells))
    n = math.ceil(nranks / block)
    cells: dict[tuple[int, int], list[int]] = {}
    for m in matrix:
        c = cells.setdefault((m.src // block, m.dst // block), [0, 0])
        c[0] += m.bytes
        c[1] += m.messages
    return {"n": n, "block": block, "ranks": nranks,
            "cells": [[i, j, b, k] for (i, j), (b, k) in sorted(cells.items())]}


@section
class MatrixSection(Section):
    """Point-to-point traffic between ranks: the matrix (HTML) and the top talkers."""

    id, title, order = "matrix", "Communication matrix", 50
    text_order = 65  # the top talkers, after the message sizes

    def html(self, ctx: Context) -> str | None:
        s = ctx.summary
        if not s.talkers:
            return '<p class="note">No point-to-point traffic was measured.</p>'
        ctx.data["matrix"] = matrix_blocks(s.talkers, s.nranks)
        block = ctx.data["matrix"]["block"]
        note = f" Each cell is a block of {block} ranks." if block > 1 else ""
        top = "".join(f"<tr><td>{m.src}</td><td>{m.dst}</td>" + _num(m.messages, units.count(m.messages))
                      + _num(m.bytes, units.size(m.bytes)) + "</tr>" for m in s.talkers[:10])
        return ('<label>Colour by<select class="ml-metric"><option value="bytes">bytes</option>'
                '<option value="messages">messages</option></select></label>'
                '<div data-chart="heat" data-key="matrix" id="matrix-chart"></div>'
                f'<p class="note">Point-to-point sends from source (row) to destination (column), world ranks, '
                f"log colour scale.{note} Hover a cell for its values.</p>"
                '<table class="ml-sortable" id="talkers-table"><thead><tr><th>From</th><th>To</th><th>Messages</th>'
                f"<th>Bytes</th></tr></thead><tbody>{top}</tbody></table>")

    def figures(self, ctx: Context) -> list[Figure]:
        s = ctx.summary
        if not s.talkers:
            return []
        blocks = matrix_blocks(s.talkers, s.nranks)

        def draw(fig: Any) -> None:
            import numpy as np
            from matplotlib.colors import LogNorm

            m = np.zeros((blocks["n"], blocks["n"]))
            for i, j, b, _ in blocks["cells"]:
                m[i, j] = b
            ax = fig.add_subplot()
            im = ax.imshow(np.ma.masked_equal(m, 0), cmap="Reds", norm=LogNorm(), interpolation="nearest")
            ax.set_xlabel("destination" + (f" (blocks of {blocks['block']} ranks)" if blocks["block"] > 1 else " rank"))
            ax.set_ylabel("source" + (" block" if blocks["block"] > 1 else " rank"))
            ax.set_title("Point-to-point bytes")
            fig.colorbar(im, ax=ax, label="bytes")
        return [Figure("matrix", draw)]

    def text(self, ctx: Context) -> list[str] | None:
        s = ctx.summary
        if not s.talkers:
            return None
        rows = [[str(m.src), str(m.dst), units.count(m.messages), units.size(m.bytes),
                 units.size(m.bytes / m.messages if m.messages else 0)] for m in s.talkers[:10]]
        return ["@ Top talkers (point-to-point, by bytes)"] + text_table(["From", "To", "Messages", "Bytes",
                                                                           "Bytes/msg"], rows)


def size_bins(ctx: Context) -> list[dict[str, Any]]:
    """Message-size bins over all functions, for the histogram: every power of two between the
    smallest and the largest size seen, empty ones included, so the axis is even."""
    seen = {lo: (calls, t) for lo, _, calls, t in ctx.summary.sizes}
    if not seen:
        return []
    bits = sorted(lo.bit_length() for lo in seen)  # bin k holds [2^(k-1), 2^k); 0 holds 0 bytes
    out = []
    for k in range(bits[0], bits[-1] + 1):
        lo = 0 if k == 0 else 1 << (k - 1)
        calls, t = seen.get(lo, (0, 0.0))
        out.append({"label": "0 B" if k == 0 else units.size(lo), "calls": calls, "time": t, "min_bytes": lo,
                    "max_bytes": 0 if k == 0 else (1 << k) - 1})
    return out


@section
class SizesSection(Section):
    """Transfers by message size (power-of-two bins)."""

    id, title, order = "sizes", "Message sizes", 60

    def html(self, ctx: Context) -> str | None:
        bins = size_bins(ctx)
        if not bins:
            return '<p class="note">No call moved data.</p>'
        ctx.data["sizes"] = {"bins": bins}
        return ('<div data-chart="hist" data-key="sizes"></div>'
                '<p class="note">Transfers of all functions by size; each bar is a power-of-two range starting at '
                "its label. Nonblocking transfers are counted when they complete.</p>")

    def figures(self, ctx: Context) -> list[Figure]:
        bins = size_bins(ctx)
        if not bins:
            return []

        def draw(fig: Any) -> None:
            ax = fig.add_subplot()
            ax.bar(range(len(bins)), [b["calls"] for b in bins], color=COMPUTE_COLOR)
            ax.set_xticks(range(len(bins)), [b["label"] for b in bins], rotation=45, ha="right")
            ax.set_ylabel("transfers")
            ax.set_title("Message sizes")
            fig.tight_layout()
        return [Figure("sizes", draw)]

    def text(self, ctx: Context) -> list[str] | None:
        s = ctx.summary
        if not s.sizes:
            return None
        out = ["@ Message sizes (transfers of all functions; nonblocking ones are timed by their Wait/Test)"]
        total = sum(c for _, _, c, _ in s.sizes) or 1
        rows = []
        for lo, hi, calls, t in s.sizes:
            label = "0 B" if hi == 0 else f"{units.size(lo)} - {units.size(hi + 1)}"
            bar = "#" * max(1, round(40 * calls / total)) if calls else ""
            rows.append([label, units.count(calls), units.percent(calls / total), units.seconds(t), bar])
        return out + text_table(["Size", "Calls", "Share", "Time (blocking)", ""], rows, {1, 2, 3})


@section
class RegionsSection(Section):
    """User regions: time per rank, MPI time inside, top MPI function."""

    id, title, order = "regions", "Regions", 70

    def html(self, ctx: Context) -> str | None:
        regions = ctx.summary.regions
        if not regions:
            return ('<p class="note">The application marks no regions. Mark phases with mpilens_region_begin/end '
                    "(mpilens.h) to see MPI time per phase.</p>")
        rows = []
        for r in regions:
            share = r.mpi_time.total / r.time.total if r.mpi_time and r.time and r.time.total else None
            top = r.functions[0].name if r.functions else ""
            shown = name_html(r.name)
            rows.append(f'<tr><td class="l" style="padding-left:{8 + 18 * r.depth}px">{shown}</td>'
                        + _num(r.visits.total if r.visits else None, units.count(r.visits.total if r.visits else None))
                        + _num(r.time.mean if r.time else None, units.seconds(r.time.mean if r.time else None))
                        + _num(r.time.max if r.time else None, units.seconds(r.time.max if r.time else None))
                        + _num(r.time.max_rank if r.time else None, str(r.time.max_rank) if r.time else "n/a")
                        + _num(r.mpi_time.mean if r.mpi_time else None,
                               units.seconds(r.mpi_time.mean if r.mpi_time else None))
                        + _num(share, units.percent(share)) + f'<td class="l">{escape(top)}</td></tr>')
        head = "".join(f"<th>{h}</th>" for h in ["Region", "Visits", "Time (mean/rank)", "Time (max/rank)", "Max rank",
                                                 "MPI (mean/rank)", "MPI share", "Top MPI function"])
        return (f'<table class="tree" id="regions-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
                "</table>")

    def figures(self, ctx: Context) -> list[Figure]:
        regions = [r for r in ctx.summary.regions if r.time]
        if not regions:
            return []

        def draw(fig: Any) -> None:
            ax = fig.add_subplot()
            names = [r.path for r in regions][::-1]
            mpi = [(r.mpi_time.mean if r.mpi_time else 0.0) for r in regions][::-1]
            rest = [max(r.time.mean - m, 0.0) for r, m in zip(regions[::-1], mpi)]  # type: ignore[union-attr]
            ax.barh(names, mpi, color=MPI_COLOR, label="MPI")
            ax.barh(names, rest, left=mpi, color=COMPUTE_COLOR, label="outside MPI")
            ax.set_xlabel("seconds (mean per rank)")
            ax.set_title("Regions")
            ax.legend()
            fig.tight_layout()
        return [Figure("regions", draw)]

    def text(self, ctx: Context) -> list[str] | None:
        s = ctx.summary
        if not s.regions:
            return None
        rows = []
        for r in s.regions:
            top = r.functions[0].name if r.functions else ""
            share = (r.mpi_time.total / r.time.total) if r.mpi_time and r.time and r.time.total else None
            rows.append(["  " * r.depth + r.name, units.count(r.visits.total if r.visits else None),
                         units.seconds(r.time.mean if r.time else None), units.seconds(r.time.max if r.time else None),
                         units.seconds(r.mpi_time.mean if r.mpi_time else 0.0), units.percent(share), top])
        return ["@ Regions (time per rank: mean / max; MPI time inside)"] + text_table(
            ["Region", "Visits", "Mean", "Max", "MPI(mean)", "MPI%", "Top MPI function"], rows, {1, 2, 3, 4, 5})


@section
class SettingsSection(Section):
    """How the run was measured, for the JSON report (the text report's summary says it in words)."""

    id, title, order = "settings", "Settings", 1000

    def json(self, ctx: Context) -> dict[str, Any]:
        s = ctx.summary
        return {
            "cvars_set": (ctx.run.meta or {}).get("cvars_set") or [],
            # null when every call was timed; else {every: N, timed, calls} (MPILENS_TIME_SAMPLE)
            "time_sampling": None if s.sampling is None else {"every": s.sampling.every, "timed_calls": s.sampling.timed,
                                                              "calls": s.sampling.calls},
        }
