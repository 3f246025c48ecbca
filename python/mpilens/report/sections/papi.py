"""Report section: PAPI counts of a `--mode papi` run, per rank and per region, with derived
metrics and the compute-phase imbalance in work versus time (python/mpilens/papi.py)."""

from __future__ import annotations

from html import escape
from typing import Any

from ... import papi
from ...errors import RunDirectoryError
from . import Context, Section, section


def _num(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.3g}"


def _td(v: Any, left: bool = False) -> str:
    text = v if isinstance(v, str) else _num(v)
    data = "" if isinstance(v, str) or v is None else f' data-v="{v}"'
    cls = ' class="l"' if left else ""
    return f"<td{cls}{data}>{escape(text)}</td>"


def _table(tid: str, head: list[str], rows: list[list[str]]) -> str:
    return (f'<div style="overflow-x:auto"><table class="ml-sortable" id="{tid}"><thead><tr>'
            + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(r) + "</tr>" for r in rows) + "</tbody></table></div>")


@section
class PapiSection(Section):
    """PAPI mode: counts per rank and region, derived metrics, work vs time imbalance."""

    id, title, order = "papi", "Hardware counters (PAPI)", 80

    def html(self, ctx: Context) -> str | None:
        if "papi" not in ctx.run.modes:
            return None
        try:
            run = ctx.run.papi
        except RunDirectoryError as err:
            return f'<ul class="problems"><li>{escape(str(err))}</li></ul>'
        s = papi.summary(run)
        ev = run.events
        notes = [f"Not available on this machine, left out: {run.refused}"] if run.refused else []
        if run.off_reason:
            notes.append(f"Nothing was counted: {run.off_reason}")
        notes += run.problems
        out = [f'<p class="note">Events: {escape(", ".join(ev) or "none")}; read at '
               + ("every MPI call and region boundary, so the counts below are of the compute between MPI calls"
                  if run.read == "calls" else "region boundaries only, so the counts include the MPI calls")
               + (", multiplexed" if run.multiplex else "") + ".</p>"]
        if notes:
            out.append('<ul class="problems">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
        if not ev:
            return "".join(out)
        derived = sorted({k for r in s["ranks"] if r for k in r["derived"]} |
                         {k for g in s["regions"] for k in g["derived"]})
        rows = [[_td(str(r["rank"]), True), _td(None if r["compute_s"] is None else round(r["compute_s"], 6))]
                + [_td(r["compute"][e]) for e in ev]
                + [_td(r["derived"].get(d)) for d in derived] + [_td(round(r["read_cost_ns"] / 1000, 2))]
                for r in s["ranks"] if r]
        out.append("<h3>Per rank</h3>" + _table("papi-ranks", ["Rank", "Time (s)"] + ev + derived + ["Read (us)"], rows))
        rows = [[_td(g["path"], True), _td(g["phases"]), _td(round(g["compute_s"], 6))]
                + [_td(g["compute"][e]) for e in ev] + [_td(g["derived"].get(d)) for d in derived]
                + [_td(g["imbalance"]["kind"] if g["imbalance"] else "not judged (short)")]
                for g in s["regions"]]
        out.append("<h3>Per region (sum over ranks)</h3>"
                   + _table("papi-regions", ["Region", "Phases", "Time (s)"] + ev + derived + ["Imbalance"], rows))
        verdicts = [s["imbalance"]] + [g["imbalance"] for g in s["regions"]
                                       if g["imbalance"] and g["imbalance"]["kind"] in ("work", "efficiency")]
        out.append(f"<h3>Compute imbalance: more work or slower work</h3><p class=\"note\">Work = "
                   f"{escape(s['work_event'] or 'not counted')}. A rank whose compute takes longer with proportionally "
                   "more work has more work; one that takes longer for the same work does it more slowly "
                   "(seeds/000, chapter 4).</p><ul>" + "".join(f"<li>{escape(v['message'])}</li>" for v in verdicts)
                   + "</ul>")
        return "".join(out)
