"""Report section of MPI_T: the control variables mpilens set (old -> new), the pvar series of
mpit mode (a small line chart per variable, one line per rank), the variables that are absent, and
the recommendation rules with their evidence."""

from __future__ import annotations

from html import escape
from typing import Any

from ... import mpit as mp
from ... import recommend
from . import Context, Figure, Section, section

MAX_RANK_LINES = 16
W, H = 360, 90


def mpit_of(ctx: Context) -> tuple[Any, list[Any], str | None] | None:
    """(MpitRun, rule results, why the rules could not be applied or None) of the run, computed
    once; None when the run has nothing of MPI_T."""
    def compute() -> tuple[Any, list[Any], str | None] | None:
        m = ctx.run.mpit if ctx.run.meta is not None else None
        if m is None or (not m.cvars_set and not m.recorded):
            return None  # a run that did not use MPI_T: `mpilens mpit recommend RUNDIR` still applies the rules
        try:
            return m, recommend.recommend(ctx.run), None
        except Exception as err:  # noqa: BLE001 - a rule must not break the report
            # shown in this section: the Summary section has printed the run's problems already
            return m, [], f"MPI_T recommendations could not be computed: {err}"
    return ctx.once("mpit", compute)


def _spark(series: list[Any]) -> str:
    """An inline SVG: one polyline per rank (sum over elements of per-peer variables)."""
    pts = [(s.t, s.totals()) for s in series[:MAX_RANK_LINES]]
    ts = [t for ts_, _ in pts for t in ts_]
    vs = [v for _, vals in pts for v in vals if v is not None]
    if not ts or not vs:
        return "<em>absent</em>"
    t0, t1 = min(ts), max(ts) or 1.0
    v0, v1 = min(vs), max(vs)
    span_t = (t1 - t0) or 1.0
    span_v = (v1 - v0) or 1.0
    lines = []
    for k, (tt, vals) in enumerate(pts):
        xy = " ".join(f"{(t - t0) / span_t * (W - 10) + 5:.1f},{H - 5 - ((v - v0) / span_v) * (H - 10):.1f}"
                      for t, v in zip(tt, vals) if v is not None)
        hue = (k * 47) % 360
        lines.append(f'<polyline fill="none" stroke="hsl({hue},55%,45%)" stroke-width="1" points="{xy}"/>')
    return (f'<svg width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="series">'
            f'<rect width="{W}" height="{H}" fill="none" stroke="#ddd"/>{"".join(lines)}</svg>'
            f'<div class="note">{v0:.6g} &ndash; {v1:.6g} over {t1 - t0:.3g} s</div>')


@section
class MpitSection(Section):
    """MPI_T: cvars set, pvar series of mpit mode, and the recommendation rules."""

    id, title, order = "mpit", "MPI_T: control and performance variables", 60

    def html(self, ctx: Context) -> str | None:
        got = mpit_of(ctx)
        if got is None:
            return None
        m, results, error = got
        out = []
        if m.cvars_set:
            rows = "".join(
                f"<tr><td class=\"l\">{escape(c['name'])}</td><td class=\"l\">{escape(str(c.get('old')))}</td>"
                f"<td class=\"l\">{escape(str(c.get('new')) if c.get('new') is not None else 'not applied')}</td>"
                f"<td class=\"l\">{escape(c.get('communicator') or 'all (MPI_Init)')}</td>"
                f"<td class=\"l\">{escape(str(c.get('via')))}</td>"
                f"<td class=\"l\">{escape(c.get('note') or c.get('error') or '')}</td></tr>" for c in m.cvars_set)
            out.append("<h3>Control variables set</h3><table><thead><tr><th>cvar</th><th>old</th><th>new</th>"
                       f"<th>where</th><th>how</th><th>note</th></tr></thead><tbody>{rows}</tbody></table>")
        if m.recorded:
            out.append("<h3>Performance variables</h3>")
            if m.pvars_total == 0:
                out.append("<p>Absent: this MPI exposes no MPI_T performance variables (not zero: not measured).</p>")
            else:
                groups: dict[tuple[str, str | None], list[Any]] = {}
                for s in m.series:
                    groups.setdefault((s.name, s.comm), []).append(s)
                if not groups:
                    out.append(f"<p>None recorded: {m.pvars_total} exposed, none matched "
                               f"<code>{escape(m.regex)}</code>.</p>")
                cells = []
                for (name, comm), ss in groups.items():
                    label = escape(name) + (f" <small>[{escape(comm)}]</small>" if comm else "")
                    cells.append(f'<div class="mpit-series"><div><b>{label}</b> <small>{escape(ss[0].cls)}, '
                                 f"{len(ss)} ranks</small></div>{_spark(sorted(ss, key=lambda s: s.rank))}</div>")
                out.append('<div class="mpit-grid" style="display:flex;flex-wrap:wrap;gap:12px">' + "".join(cells)
                           + "</div>")

                for reason, names in mp.group_skipped(m.skipped).items():
                    out.append(f"<p class=\"note\">Not read: {escape(', '.join(names))} ({escape(reason)}).</p>")
        if results:
            items = []
            for r in results:
                recs = "".join(f"<li><b>{escape(rec.message)}</b>"
                               + "".join(f"<br><code>{escape(a)}</code>" for a in rec.apply) + "</li>"
                               for rec in r.recommendations)
                ev = "".join(f"<li>{escape(e)}</li>" for e in r.evidence)
                items.append(f"<li><b>[{escape(r.status)}]</b> {escape(r.title)}<ul>{recs}{ev}</ul></li>")
            out.append("<h3>Recommendations</h3><ul>" + "".join(items) + "</ul>")
        if error:
            out.append(f'<ul class="problems"><li>{escape(error)}</li></ul>')
        for p in m.problems:
            out.append(f'<p class="note">{escape(p)}</p>')
        return "\n".join(out)

    def figures(self, ctx: Context) -> list[Figure]:
        got = mpit_of(ctx)
        if got is None or not got[0].series:
            return []
        m = got[0]

        def draw(fig: Any) -> None:
            names = sorted({(s.name, s.comm) for s in m.series})[:6]
            for i, (name, comm) in enumerate(names):
                ax = fig.add_subplot(len(names), 1, i + 1)
                for s in [x for x in m.series if (x.name, x.comm) == (name, comm)][:MAX_RANK_LINES]:
                    ax.plot(s.t, [v if v is not None else float("nan") for v in s.totals()], lw=0.8)
                ax.set_title(name + (f" [{comm}]" if comm else ""), fontsize=8)
            fig.supxlabel("seconds since MPI_Init")
        return [Figure("mpit", draw)]
