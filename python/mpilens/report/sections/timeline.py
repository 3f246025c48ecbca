"""Report section of trace mode: a timeline of the run (MPI calls per rank, message arrows) and
the findings of the timeline (late senders and receivers, waits at collectives, irregular
durations, gaps)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np

from ... import layout, units
from ...trace import findings, reader, scan
from ...trace.bins import bin_shares
from . import Context, Figure, Section, legend, section

MAX_BARS = 40_000  # calls drawn one by one; beyond, the overview is per time bin (the longest calls kept)
MAX_ARROWS = 1_500
# a trace whose files are larger than this (about 10^7 events) is analysed out of core for the report
# (mpilens.trace.scan): in memory it would take 80 bytes per event and more
OUT_OF_CORE_BYTES = 200 << 20
CLASS_COLORS = {"p2p": "#5b8db8", "collective": "#c8553d", "completion": "#e3a33b", "rma": "#8e6bb8",
                "io": "#5aa469", "probe": "#9aa0a6", "setup": "#b9bec4", "other": "#b9bec4"}


def timeline_of(ctx: Context):
    """The run's Timeline, loaded once per report (None without a trace)."""
    def load():
        if "trace" not in ctx.run.modes:
            return None
        tl = ctx.run.trace
        _problems(ctx, tl.problems)
        return tl
    return ctx.once("timeline", load)


def _problems(ctx: Context, problems: list[str]) -> None:
    # what is wrong with the trace is wrong with the report's findings: said with the run's problems
    ctx.run.problems.extend(f"trace: {p}" for p in problems if f"trace: {p}" not in ctx.run.problems)


@dataclass
class TraceView:
    """What the section shows of a trace, from the in-memory Timeline or, for a large trace, from
    the out-of-core analysis."""

    events: int
    messages: int
    unmatched_sends: int
    unmatched_recvs: int
    file_bytes: int
    writer_cpu_s: float | None
    clock_error_s: dict[str, float | None]
    classes: list[str]
    rundir: Any
    findings: list
    chart: Callable[[], dict[str, Any]]
    source: Any  # the Timeline, or the out-of-core analysis' Scan (what the variability model reads)
    out_of_core: bool = False


def view_of(ctx: Context) -> TraceView | None:
    """The run's trace as the section shows it, once per report (None without a trace): a trace
    whose files pass OUT_OF_CORE_BYTES is analysed out of core (its chart per time bin)."""
    def load() -> TraceView | None:
        if "trace" not in ctx.run.modes:
            return None
        size = sum(f.size if isinstance(f, layout.Member) else f.stat().st_size
                   for f in layout.trace_files(ctx.run.path))
        if size > OUT_OF_CORE_BYTES:
            s = scan.scan(ctx.run.path, chart=(MAX_BARS, MAX_ARROWS))
            _problems(ctx, s.problems)
            return TraceView(s.events, s.messages, s.unmatched_sends, s.unmatched_recvs, s.file_bytes, s.writer_cpu_s,
                             s.clock_error_s, s.classes, s.rundir, s.findings, lambda: chart_from_scan(s), s, True)
        tl = timeline_of(ctx)
        m = tl.messages
        return TraceView(len(tl.ev), len(m.send_ev), m.unmatched_sends, m.unmatched_recvs, tl.file_bytes,
                         tl.writer_cpu_s, tl.clock_error_s, tl.classes, tl.rundir, findings.find(tl),
                         lambda: chart_data(tl), tl)
    return ctx.once("trace_view", load)


def findings_of(ctx: Context) -> list:
    """The findings of the run's timeline, computed once per report ([] without a trace)."""
    v = view_of(ctx)
    return v.findings if v is not None else []


def chart_data(tl: Any) -> dict[str, Any]:
    """Bars (rank row, start, end, class, function) and arrows for the canvas timeline."""
    ev = tl.ev
    calls = np.flatnonzero(ev["kind"] == reader.CALL)
    end = float(ev["t1"].max()) if len(ev) else 0.0
    dur = ev["t1"][calls] - ev["t0"][calls]
    m = tl.messages
    # rows from every call and message end, before the truncation: a rank whose calls are all
    # merged away keeps its row, and the arrows to and from it still land on it
    ends = np.concatenate([calls, m.send_ev, m.recv_ev]).astype(np.int64)
    rows = sorted({(int(r), int(t)) for r, t in zip(ev["rank"][ends], ev["thread"][ends])})
    row_of = {rt: i for i, rt in enumerate(rows)}
    classes = sorted(set(tl.classes))
    cls_index = np.array([classes.index(c) for c in tl.classes], dtype=np.int32)
    bins = None
    if len(calls) > MAX_BARS:  # the overview per time bin; one by one, the longest calls (zoomed in)
        keys = (ev["rank"][calls].astype(np.int64) << 32) | ev["thread"][calls].astype(np.int64)
        uniq, inv = np.unique(keys, return_inverse=True)
        row = np.array([row_of[(int(k) >> 32, int(k) & 0xFFFFFFFF)] for k in uniq], dtype=np.int64)[inv]
        bins = bin_shares(row, cls_index[ev["fn"][calls]], ev["t0"][calls], ev["t1"][calls], len(rows), len(classes),
                          end)
        calls = calls[np.argsort(-dur, kind="stable")[:MAX_BARS]]
    used_fn = sorted(set(ev["fn"][calls].tolist()))
    fn_index = {f: i for i, f in enumerate(used_fn)}
    bars = [[row_of[(int(r), int(t))], round(float(a), 9), round(float(b), 9), int(cls_index[f]), fn_index[int(f)]]
            for r, t, a, b, f in zip(ev["rank"][calls], ev["thread"][calls], ev["t0"][calls], ev["t1"][calls],
                                     ev["fn"][calls])]
    pick = np.arange(len(m.send_ev))
    if len(pick) > MAX_ARROWS:
        pick = np.linspace(0, len(pick) - 1, MAX_ARROWS).astype(np.int64)
    arrows = [[row_of[(int(ev["rank"][m.send_ev[k]]), int(ev["thread"][m.send_ev[k]]))],
               round(float(m.send_t[k]), 9),
               row_of[(int(ev["rank"][m.recv_ev[k]]), int(ev["thread"][m.recv_ev[k]]))],
               round(float(max(m.recv_t[k], m.send_t[k])), 9), int(m.bytes[k])] for k in pick]
    return {"end": end, "rows": [f"rank {r}" + (f" t{t}" if t else "") for r, t in rows], "bars": bars,
            "arrows": arrows, "classes": classes, "colors": [CLASS_COLORS.get(c, "#999") for c in classes],
            "functions": [tl.functions[f] for f in used_fn], "sampled_arrows": len(m.send_ev) > MAX_ARROWS,
            "bins": bins}


def chart_from_scan(s: Any) -> dict[str, Any]:
    """chart_data's chart from the parts the out-of-core analysis gives (mpilens.trace.scan)."""
    c = s.chart
    rows = c["rows"]
    row_of = {rt: i for i, rt in enumerate(rows)}
    classes = c["classes"]
    cls_index = np.array([classes.index(k) for k in s.classes], dtype=np.int32)
    used_fn = sorted({b[4] for b in c["bars"]})
    fn_index = {f: i for i, f in enumerate(used_fn)}
    bars = [[row_of[(r, t)], round(a, 9), round(b, 9), int(cls_index[f]), fn_index[f]] for r, t, a, b, f in c["bars"]]
    arrows = [[row_of[(sr, st)], round(ts, 9), row_of[(rr, rt)], round(tr, 9), n]
              for (sr, st, ts), (rr, rt, tr), n in c["arrows"]]
    return {"end": c["end"], "rows": [f"rank {r}" + (f" t{t}" if t else "") for r, t in rows], "bars": bars,
            "arrows": arrows, "classes": classes, "colors": [CLASS_COLORS.get(k, "#999") for k in classes],
            "functions": [s.functions[f] for f in used_fn], "sampled_arrows": c["sampled"],
            "bins": c["bins"] if c["calls"] > MAX_BARS else None}


def cost(tl: Any) -> str:
    """What the trace took: its size and its writer threads' CPU time (tl: a TraceView)."""
    if not tl.events:
        return ""
    text = f"The trace takes {units.size(tl.file_bytes)} ({tl.file_bytes / tl.events:.1f} bytes per event)"
    if tl.writer_cpu_s is not None:
        text += f"; writing it took the ranks' writer threads {units.seconds(tl.writer_cpu_s)} of CPU"
    if tl.clock_error_s:
        known = [e for e in tl.clock_error_s.values() if e is not None]
        text += (f". {len(tl.clock_error_s)} other host(s) aligned to rank 0's clock"
                 + (f" within {units.seconds(max(known))}" if known else ""))
    return text + ". "


@section
class TimelineSection(Section):
    """Trace mode: the timeline (HTML) and its findings (all forms)."""

    id, title, order = "timeline", "Timeline", 25
    text_order = json_order = 95  # after the profile's findings

    @staticmethod
    def _covered(ctx: Context) -> bool:
        """Whether the text and JSON reports give the timeline's findings: a trace covers the
        whole run, not an MPI_Pcontrol snapshot."""
        return "trace" in ctx.run.modes and ctx.run.snapshot is None

    def text(self, ctx: Context) -> list[str] | None:
        if not self._covered(ctx):
            return None
        found = findings_of(ctx)  # what the timeline shows, worst first per kind
        return ["@ Timeline findings (trace)"] + ([] if found else ["Nothing stands out in the timeline."]) \
            + [f"[{f.kind}] {f.message}" for f in found]

    def json(self, ctx: Context) -> dict[str, Any]:
        # null without a trace, a list (maybe empty) with one
        return {"timeline_findings": [f.to_dict() for f in findings_of(ctx)] if self._covered(ctx) else None}

    def html(self, ctx: Context) -> str | None:
        tl = view_of(ctx)
        if tl is None:
            return None
        ctx.data["timeline"] = ctx.once("timeline_chart", tl.chart)
        keys = legend((c, CLASS_COLORS.get(c, "#999")) for c in sorted(set(tl.classes))
                      if c in ("p2p", "collective", "completion", "rma", "io"))
        rows = "".join(
            f'<tr><td class="l">{escape(f.kind.replace("_", " "))}</td><td>{f.rank}</td>'
            f'<td data-v="{f.time_s}">{units.seconds(f.time_s)}</td>'
            f'<td data-v="{f.duration_s}">{units.seconds(f.duration_s)}</td>'
            f'<td>{units.size(f.bytes) if f.bytes is not None else ""}</td><td class="l wrap">{escape(f.message)}</td></tr>'
            for f in findings_of(ctx))
        table = ('<table class="ml-sortable" id="trace-findings"><thead><tr><th>Kind</th><th>Rank</th><th>When</th>'
                 f'<th>Duration</th><th>Size</th><th class="l">What</th></tr></thead><tbody>{rows}</tbody></table>'
                 if rows else "<p>No late partner, collective wait, irregular duration or gap stands out.</p>")
        data = ctx.data["timeline"]
        note = " (a sample of the arrows is drawn)" if data["sampled_arrows"] else ""
        binned = "" if data["bins"] is None else (
            f"Each rank's calls are shown per time bin of {units.seconds(data['bins']['width'])} (the share of the bin "
            f"in each class of calls); zoomed in, the {len(data['bars']):,} longest calls are drawn one by one. ")
        return (f'<div class="legend">{keys}<span>&rarr; messages{note}</span></div>'
                '<div data-chart="timeline" data-key="timeline" id="timeline-chart"></div>'
                f'<p class="note">{tl.events:,} events, {tl.messages:,} messages matched send to receive '
                f"({tl.unmatched_sends} sends and {tl.unmatched_recvs} receives without a partner). {cost(tl)}{binned}"
                "Drag to zoom, double-click to zoom out, hover for details. Every event, in Perfetto (ui.perfetto.dev): "
                f"<code>mpilens export perfetto {escape(str(tl.rundir or 'RUNDIR'))} -o run.perfetto-trace</code>.</p>"
                + table)

    def figures(self, ctx: Context) -> list[Figure]:
        tl = view_of(ctx)
        if tl is None:
            return []
        data = ctx.once("timeline_chart", tl.chart)

        def draw(fig: Any) -> None:
            ax = fig.add_subplot()
            for row, a, b, cls, _ in data["bars"]:
                ax.barh(row, max(b - a, data["end"] / 5000), left=a, height=0.7, color=data["colors"][cls])
            for r0, t0, r1, t1, _ in data["arrows"][:300]:
                ax.annotate("", xy=(t1, r1), xytext=(t0, r0), arrowprops={"arrowstyle": "->", "lw": 0.5, "alpha": 0.5})
            ax.set_yticks(range(len(data["rows"])), data["rows"])
            ax.invert_yaxis()
            ax.set_xlabel("seconds")
            ax.set_title("Timeline")
        return [Figure("timeline", draw)]
