"""Report section of runs recorded with MPILENS_INTERVALS: the per-interval maxima (the length of
each bulk-synchronous step), their GEV fits (PWM, MOM, MLE; Hosking's sign) and EMMA projections
of the expected step at larger scales. `mpilens model variability` gives the bootstrap intervals."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from ... import units
from ...errors import RunDirectoryError
from ...model import data, emma, gev
from ...model.variability import Options, fit_row, rank_correlation
from . import Context, Figure, Section, section
from .timeline import view_of

SCALES = (2, 4, 8, 16, 64)


def _analysis(ctx: Context) -> dict[str, Any] | None:
    """Fits and projections of the run's interval maxima, computed once per report (None without
    intervals; {"error": why} when they could not be analysed)."""
    return ctx.once("variability", lambda: _analyse(ctx))


def _analyse(ctx: Context) -> dict[str, Any] | None:
    try:
        import numpy as np

        try:
            # the trace as the timeline section analysed it (once; out of core when it is large)
            s = data.load(ctx.run.path, load_trace=lambda: view_of(ctx).source)
        except RunDirectoryError:
            return None
        row = fit_row("interval maxima", s.maxima, np.random.default_rng(0), Options(targets=[]).type_replicas)
        proj = []
        # projections shown as n/a (never as 0): (fit, why) -> the scales (ranks) concerned
        invalid: dict[tuple[str, str], list[int]] = {}
        for f in SCALES:
            e: dict[str, float | None] = {}
            for m in ("PWM", "MOM", "MLE"):
                d = row[m]
                if None in (d["shape_k"], d["loc"], d["scale"]):
                    e[m] = None  # the fit failed: said once, below the table
                    continue
                v = float(emma.gev_emma(d["shape_k"], d["loc"], d["scale"], f))
                why = ("the projection is negative, which is invalid (the fit's lower tail reaches below zero)"
                       if v < 0 else "the projection is not finite" if not math.isfinite(v) else None)
                if why:
                    invalid.setdefault((m, why), []).append(f * s.nranks)
                e[m] = None if why else v
            proj.append((f * s.nranks, e))
        return {"sample": s, "fits": row, "projections": proj, "invalid": invalid,
                "corr": rank_correlation(s.times)}
    except Exception as err:  # noqa: BLE001 - a report section never breaks the report
        return {"error": str(err)}


@section
class VariabilitySection(Section):
    """MPILENS_INTERVALS runs: interval maxima, GEV fits and EMMA projections."""

    id, title, order = "variability", "Variability (intervals)", 80

    def html(self, ctx: Context) -> str | None:
        a = _analysis(ctx)
        if a is None:
            return None
        if "error" in a:
            return f'<p class="note">The intervals could not be analysed: {escape(a["error"])}</p>'
        s, row = a["sample"], a["fits"]
        mx = s.maxima
        out = [f'<p>{s.intervals} intervals between synchronizing collectives on all {s.nranks} ranks (the first, '
               f'from MPI_Init, left out). Interval maximum over ranks: mean {escape(units.seconds(float(mx.mean())))}, '
               f'largest {escape(units.seconds(float(mx.max())))}; sum (the bulk-synchronous runtime) '
               f'{escape(units.seconds(s.runtime))}. Mean cross-rank correlation of interval times: '
               + ("n/a" if a["corr"] is None else f"{a['corr']:.2f}") + ".</p>"]
        head = "".join(f"<th>{h}</th>" for h in ("Fit", "k (Hosking)", "location", "scale", "type", "KS p"))
        rows = []
        for m in ("PWM", "MOM", "MLE"):
            d = row[m]
            ks = "" if d.get("ks_pvalue") is None else f"{d['ks_pvalue']:.3f}"
            rows.append(f'<tr><td class="l">{m}</td><td>{_g(d["shape_k"])}</td><td>{_g(d["loc"])}</td>'
                        f'<td>{_g(d["scale"])}</td><td>{escape(d["type"])}</td><td>{ks}</td></tr>')
        out.append(f'<table id="variability-fits"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')
        agree = "agree" if row["types_agree"] else "disagree: treat parametric predictions with caution"
        out.append(f'<p class="note">GEV fits of the interval maxima, Hosking\'s sign (k &gt; 0 Type III, bounded; '
                   f'k &lt; 0 Type II, heavy tail; Type I when |k| &le; {row["type_tolerance"]:.3g}). PWM and MOM '
                   f'{agree}.</p>')
        head = "".join(f"<th>{h}</th>" for h in ("Ranks", "EMMA PWM", "EMMA MOM", "EMMA MLE"))
        rows = [f'<tr><td>{p}</td>' + "".join(f"<td>{escape(units.seconds(e[m]))}</td>" for m in ("PWM", "MOM", "MLE"))
                + "</tr>" for p, e in a["projections"]]
        out.append(f'<table id="variability-emma"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')
        why = [f"{m}: the fit failed, so it projects nothing" for m in ("PWM", "MOM", "MLE")
               if None in (row[m]["shape_k"], row[m]["loc"], row[m]["scale"])]
        why += [f"{m} at {', '.join(map(str, ps))} ranks: {reason}"
                for (m, reason), ps in a["invalid"].items()]
        if why:
            out.append('<p class="note">n/a: ' + escape("; ".join(why)) + ".</p>")
        out.append('<p class="note">Expected interval maximum at larger scales, EMMA F<sup>-1</sup>(0.570376<sup>1/f'
                   '</sup>) of each fit, assuming the added ranks behave like independent copies of these. Predicted '
                   'runtimes with 95 % intervals (bootstraps) and their accuracy: <code>mpilens model variability '
                   f'{escape(str(ctx.run.path))} --predict {",".join(str(p) for p, _ in a["projections"][:3])}</code>.'
                   '</p>')
        return "\n".join(out)

    def figures(self, ctx: Context) -> list[Figure]:
        a = _analysis(ctx)
        if a is None or "error" in a:
            return []
        s, row = a["sample"], a["fits"]

        def draw(fig: Any) -> None:
            import numpy as np

            ax = fig.add_subplot()
            mx = s.maxima
            ax.hist(mx, bins=min(40, max(10, len(mx) // 5)), density=True, color="#c9d6e3", label="interval maxima")
            x = np.linspace(mx.min() - 0.1 * np.ptp(mx), mx.max() + 0.1 * np.ptp(mx), 300)
            for m, c in (("PWM", "#c44e52"), ("MOM", "#55a868"), ("MLE", "#4c72b0")):
                d = row[m]
                if d["shape_k"] is None or not d["scale"]:
                    continue
                g = gev.GEV(d["shape_k"], d["loc"], d["scale"], m)
                ax.plot(x, g.scipy().pdf(x), color=c, label=f"{m} GEV, k = {d['shape_k']:.3g} (type {d['type']})")
            ax.set_xlabel("interval maximum over ranks (s)")
            ax.set_ylabel("density")
            ax.set_title("Per-interval maxima and GEV fits")
            ax.legend(fontsize=8)
            fig.tight_layout()
        return [Figure("variability", draw)]


def _g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"
