"""The analysis behind `mpilens model variability`: GEV fits, diagnostics, bootstrap predictions
of the runtime at larger scales, and their accuracy against measured runs.

Calibration: one or more runs at the same number of ranks P0 (run directories recorded with
MPILENS_INTERVALS=1, or BSP harness logs). Their interval maxima are pooled (stationarity across
runs is assumed); hosts define the nodes of the inter-node method, and the rank's position on
its host the slots of the intra-node method.

Prediction at P ranks, for one run of K intervals (K = the calibration runs' interval count):
- non-parametric bootstrap of the pooled maxima, scale factor f = P / P0;
- inter-node parametric bootstrap (units: per-interval maximum of one node's ranks, m = P / g
  for g ranks per node), PWM and MOM fits;
- intra-node parametric bootstrap (units: one rank slot's interval times pooled over nodes,
  m = P), PWM and MOM fits;
- hybrid bootstrap (empirical body + PWM GEV tail of the maxima), f = P / P0;
- EMMA point projections K F^-1(0.570376002^(1/f)) of the PWM, MOM and MLE fits to the pooled
  maxima (no interval; MLE for comparison only).
See bootstrap.py for the method and assumptions of each.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MpilensError
from . import bootstrap as bs
from . import emma, gev
from .data import Sample

SCHEMA = "mpilens.model.variability/1"
FITS = ("PWM", "MOM")
CORRELATION_LIMIT = 0.3  # mean cross-rank correlation above which ranks are not independent

CONVENTIONS = {
    "gev_shape": "Hosking's sign, as scipy.stats.genextreme's c: F(x) = exp(-[1 - k (x - loc)/scale]^(1/k)); "
                 "k > 0 Type III (Weibull, bounded upper tail), k < 0 Type II (Frechet, heavy tail), "
                 "Type I (Gumbel) when |k| is within the half-width of the 95 % bootstrap interval of k (the "
                 "larger of PWM's and MOM's); shape_jenkinson = -k is the sign of the thesis' Eq. 2.1",
    "runtime": "sum over the intervals of one run of the per-interval maximum over ranks (seconds)",
    "interval": "central 95 % percentile interval of the bootstrap predictive replicas of one run's runtime "
                "(calibration-sample uncertainty and the run's own interval-to-interval noise)",
    "expected_interval": "central 95 % percentile interval of the replicas of the expected runtime K x EMMA "
                         "(the thesis' confidence interval; without the run's own noise)",
    "emma": "E[max of m i.i.d. draws] ~ F^-1(0.570376002^(1/m))",
    "coverage": "fraction of the measured runtimes at the target scales inside the 95 % interval",
    "median_rel_error": "median over measured runs of |predicted median - measured| / measured",
}

TRUST_GUIDE = [
    "non-parametric: the weakest assumptions (stationary maxima only); trust it while the scale factor f = P/P0 "
    "stays below n/10 calibration maxima. It cannot predict beyond the largest observed maximum, so it "
    "underestimates far extrapolations.",
    "inter-node / intra-node parametric: assume the target's nodes (ranks) are i.i.d. copies of the calibrated "
    "ones and that a GEV fits them; trust them when PWM and MOM agree on the GEV type in every calibration run "
    "and ranks are independent (low cross-rank correlation). Internal synchronization (HPCG, LAMMPS in the "
    "thesis) makes every rank report the maximum: they then overestimate the spread, though their medians "
    "stay close. With --scheme thesis (one unit per replica) their intervals are conservative (wide) even on "
    "ideal data; --scheme pooled (cluster bootstrap) is calibrated when the GEV fits the units.",
    "hybrid: non-parametric body, GEV tail; trust it for the far extrapolations where the non-parametric "
    "method saturates, when the PWM and MOM fits of the maxima agree on the type.",
    "all bootstrap intervals reach their nominal 95 % coverage when the calibration holds several times more "
    "interval maxima than one predicted run has intervals (the thesis used 20 calibration runs); with a single "
    "calibration run as long as the predicted one they cover about 88-91 % in simulations.",
]


@dataclass
class Options:
    """Settings of the analysis."""

    targets: list[int]
    replicas: int = 1000
    seed: int = 0
    intervals: int | None = None
    tail: float = 0.1
    level: float = 0.95
    type_replicas: int = 200
    methods: tuple[str, ...] = ("non-parametric", "inter-node", "intra-node", "hybrid")
    scheme: str = "thesis"  # parametric replicas: "thesis" (one unit per replica) or "pooled" (cluster)


@dataclass
class Result:
    """The JSON document and the replicas (for plots)."""

    doc: dict[str, Any]
    replicas: dict[tuple[int, str], bs.Replicas] = field(default_factory=dict)


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def rank_correlation(times: np.ndarray, limit: int = 256) -> float | None:
    """Mean Pearson correlation between the interval-time series of distinct ranks (a sample of
    `limit` ranks at most). Near 0 for independent ranks; near 1 when ranks synchronize inside
    the interval, so that every rank reports the maximum (the thesis' HPCG/LAMMPS case)."""
    t = times[:limit]
    sd = t.std(axis=1)
    t = t[sd > 0]
    if t.shape[0] < 2 or t.shape[1] < 3:
        return None
    c = np.corrcoef(t)
    n = c.shape[0]
    return float((c.sum() - np.trace(c)) / (n * (n - 1)))


def fit_all(x: np.ndarray) -> dict[str, gev.GEV]:
    """The PWM, MOM and MLE fits of one sample."""
    return {m: gev.fit(x, m) for m in ("PWM", "MOM", "MLE")}


def fit_row(label: str, x: np.ndarray, rng: np.random.Generator, type_replicas: int,
            fits: dict[str, gev.GEV] | None = None) -> dict[str, Any]:
    """PWM, MOM and MLE fits of one sample (`fits`: fit_all(x) when made already) with their GEV
    types. Type rule: a fit is Type I when |k| is within the half-width h of the 95 % bootstrap
    interval of k (h = the larger of the PWM and MOM half-widths, so that both fits are judged
    with the same tolerance and their types differ only when their shapes really differ), else
    Type II (k < 0) or III (k > 0). PWM and MOM agree when their types are equal or their shapes
    differ by less than h / 2 (labels on both sides of the Type I band's edge)."""
    row: dict[str, Any] = {"data": label, "n": int(len(x))}
    fits = fits if fits is not None else fit_all(x)
    cis = {m: gev.shape_interval(x, m, type_replicas, rng) for m in FITS}
    half = max((hi - lo) / 2 for lo, hi in cis.values())
    for method, g in fits.items():
        d = g.to_dict()
        d["shape_ci95"] = list(cis[method]) if method in cis else None
        d["type"] = gev.gev_type(g.k, g.k - half, g.k + half) if math.isfinite(g.k) else "?"
        try:
            from scipy.stats import kstest

            d["ks_pvalue"] = _num(float(kstest(x, g.scipy().cdf).pvalue)) if g.scale > 0 else None
        except Exception:  # noqa: BLE001 - a failed fit has no test
            d["ks_pvalue"] = None
        row[method] = d
    row["type_tolerance"] = half
    row["types_equal"] = row["PWM"]["type"] == row["MOM"]["type"]
    # labels that differ only because both shapes straddle the edge of the Type I band are no
    # disagreement: the shapes then differ by less than half the tolerance
    close = math.isfinite(fits["PWM"].k) and math.isfinite(fits["MOM"].k) and abs(fits["PWM"].k - fits["MOM"].k) <= half / 2
    row["types_agree"] = row["types_equal"] or close
    return row


def _units(calib: list[Sample]) -> tuple[list[np.ndarray], list[np.ndarray], int, list[str]]:
    """Inter-node units (per (run, host): per-interval maximum of the host's ranks), intra-node
    units (per slot i: the times of the i-th rank of every host of every run), ranks per node."""
    notes = []
    inter, slots = [], {}
    per_node = []
    for s in calib:
        for _host, ranks in s.host_groups().items():
            inter.append(s.times[ranks].max(axis=0))
            per_node.append(len(ranks))
            for i, r in enumerate(ranks):
                slots.setdefault(i, []).append(s.times[r])
    g = max(per_node)
    if min(per_node) != g:
        notes.append(f"hosts run {min(per_node)} to {g} ranks: inter-node units are unequal; m = P / {g} is used")
    intra = [np.concatenate(v) for _, v in sorted(slots.items())]
    return inter, intra, g, notes


def analyze(calib: list[Sample], measured: list[Sample], opts: Options) -> Result:
    """Fit, diagnose, predict and score; see the module docstring."""
    if not calib:
        raise MpilensError("no calibration runs")
    p0s = sorted({s.nranks for s in calib})
    if len(p0s) != 1:
        raise MpilensError(f"calibration runs have different numbers of ranks ({p0s}); calibrate at one scale")
    p0 = p0s[0]
    rng = np.random.default_rng(opts.seed)
    warnings: list[str] = []
    ks = sorted({s.intervals for s in calib})
    k_int = opts.intervals or int(np.median([s.intervals for s in calib]))
    if len(ks) > 1 and not opts.intervals:
        warnings.append(f"calibration runs have {ks[0]} to {ks[-1]} intervals; predictions are for runs of {k_int}")
    for s in list(calib) + list(measured):
        if s.meta.get("dropped_intervals"):
            warnings.append(f"{s.source}: {s.meta['dropped_intervals']} intervals were not recorded (MPILENS_MAX_INTERVALS "
                            "reached); only the recorded prefix is used")
        warnings += [f"{s.source}: {p}" for p in s.meta.get("problems", [])]  # e.g. ranks recovered after a kill
    maxima = np.concatenate([s.maxima for s in calib])
    n = len(maxima)
    inter, intra, g, unit_notes = _units(calib)
    warnings += unit_notes
    hosts = {h for s in calib for h in s.hosts}

    # ---- fits and diagnostics
    fit_pooled = fit_all(maxima)  # with one calibration run, the pooled maxima are its maxima
    fits = [fit_row(f"interval maxima of {s.source}", s.maxima, rng, opts.type_replicas,
                    fit_pooled if len(calib) == 1 else None) for s in calib]
    pooled_fit = fit_row("interval maxima, all calibration runs", maxima, rng, opts.type_replicas, fit_pooled) \
        if len(calib) > 1 else fits[0]
    if len(calib) > 1:
        fits.append(pooled_fit)
    agree = all(f["types_agree"] for f in fits)
    corrs = [c for c in (rank_correlation(s.times) for s in calib) if c is not None]
    corr = float(np.mean(corrs)) if corrs else None
    for f in fits:
        for m in ("PWM", "MOM", "MLE"):
            for note in f[m]["notes"]:
                warnings.append(f"{m} fit of the {f['data']}: {note}")
    diagnostics = {
        "pwm_mom_types_agree": agree,
        "types": [{"data": f["data"], "PWM": f["PWM"]["type"], "MOM": f["MOM"]["type"], "MLE": f["MLE"]["type"]}
                  for f in fits],
        "rank_correlation": _num(corr) if corr is not None else None,
        "ranks_independent": None if corr is None else bool(abs(corr) < CORRELATION_LIMIT),
        "maxima": n,
        "maxima_per_predicted_run": n / k_int,
    }
    if not agree:
        warnings.append("PWM and MOM disagree on the GEV type of some calibration run: treat the parametric "
                        "predictions with caution (thesis Fig. 3.6)")
    if corr is not None and abs(corr) >= CORRELATION_LIMIT:
        warnings.append(f"ranks' interval times are correlated (mean r = {corr:.2f}): the program synchronizes inside "
                        "the intervals, so the parametric methods' i.i.d. assumption fails and they overestimate "
                        "the spread (thesis Sec. 3.4.3); prefer the non-parametric or hybrid method")
    if n < 4 * k_int:
        warnings.append(f"{n} calibration maxima for runs of {k_int} intervals: with fewer than 4x as many maxima as "
                        "intervals per run the 95 % intervals cover less than nominal (about 0.88-0.91 at 1x in "
                        "simulations); add calibration runs")

    # ---- predictions
    targets = sorted(set(opts.targets) | {s.nranks for s in measured})
    per_inter = math.ceil(opts.replicas / max(len(inter), 1))
    per_intra = math.ceil(opts.replicas / max(len(intra), 1))
    result = Result({})
    predictions = []
    for p in targets:
        f = p / p0
        if f < 1:
            warnings.append(f"{p} ranks is below the calibration scale {p0}: the maxima methods then assume "
                            "max-stability (F^f with f < 1)")
        methods = []

        def add(name: str, fit: str | None, what: str, reps: bs.Replicas, trusted: bool, reasons: list[str],
                p: int = p, methods: list[dict[str, Any]] = methods) -> None:  # this iteration's p and methods
            s = reps.summary(opts.level)
            label = name + (f" / {fit}" if fit else "")
            notes = list(reps.notes)
            if reps.clamped_draws:
                notes.append(f"{reps.clamped_draws} of {reps.draws} interval draws were negative and clamped to 0")
                warnings.append(f"{label} at {p} ranks: {reps.clamped_draws} negative interval draws clamped to 0 "
                                "(the fit's lower tail reaches below zero)")
            if reps.clamped_expected:
                notes.append(f"{reps.clamped_expected} negative EMMA projections clamped to 0")
                warnings.append(f"{label} at {p} ranks: {reps.clamped_expected} negative EMMA projections clamped to 0")
            methods.append({"method": name, "fit": fit, "label": label, "bootstrap": what,
                            "replicas": int(len(reps.runtime)), **{k: _num(v) for k, v in s.items()},
                            "clamped_draws": reps.clamped_draws, "trusted": trusted, "trust_reasons": reasons,
                            "notes": notes})
            result.replicas[(p, label)] = reps

        nonpar_ok = f <= n / 10
        if "non-parametric" in opts.methods:
            reasons = [f"f = {f:g} {'<=' if nonpar_ok else '>'} n/10 = {n / 10:g}"]
            add("non-parametric", None, f"non-parametric bootstrap of {n} interval maxima, max of f = {f:g} draws, "
                f"{opts.replicas} replicas", bs.nonparametric(maxima, f, k_int, opts.replicas, rng), nonpar_ok,
                reasons)
        par_reasons = [f"PWM/MOM GEV types {'agree' if agree else 'disagree'}"]
        if corr is not None:
            par_reasons.append(f"cross-rank correlation {corr:.2f} ({'<' if abs(corr) < CORRELATION_LIMIT else '>='} "
                               f"{CORRELATION_LIMIT})")
        par_ok = agree and (corr is None or abs(corr) < CORRELATION_LIMIT)
        for fit in FITS:
            if "inter-node" in opts.methods:
                m = p / g
                reps = bs.parametric(inter, m, k_int, per_inter, fit, rng, opts.scheme)
                ok = par_ok and reps.clamped_draws <= 0.01 * max(reps.draws, 1)
                add("inter-node parametric", fit,
                    f"parametric bootstrap ({_scheme(opts.scheme, 'node maximum series')}), {len(inter)} node unit(s) x "
                    f"{per_inter} replicas, {fit} GEV fits, EMMA with m = P/{g} = {m:g}", reps, ok, par_reasons)
            if "intra-node" in opts.methods:
                reps = bs.parametric(intra, p, k_int, per_intra, fit, rng, opts.scheme)
                ok = par_ok and reps.clamped_draws <= 0.01 * max(reps.draws, 1)
                add("intra-node parametric", fit,
                    f"parametric bootstrap ({_scheme(opts.scheme, 'rank-slot series')}), {len(intra)} rank slot(s) x "
                    f"{per_intra} replicas, {fit} GEV fits, EMMA with m = P = {p}", reps, ok, par_reasons)
        if "hybrid" in opts.methods:
            pooled_types = pooled_fit["types_agree"]
            add("hybrid", "PWM", f"hybrid bootstrap of {n} interval maxima: empirical body, PWM GEV tail above the "
                f"top {opts.tail:.0%}, max of f = {f:g}, {opts.replicas} replicas",
                bs.hybrid(maxima, f, k_int, opts.replicas, rng, opts.tail), pooled_types,
                [f"PWM/MOM types of the pooled maxima {'agree' if pooled_types else 'disagree'}"]
                + ([] if nonpar_ok else ["beyond the non-parametric range: the GEV tail extrapolates"]))
        emma_points = {}
        for m_name, gf in fit_pooled.items():
            e = float(emma.gev_emma(gf.k, gf.loc, gf.scale, f)) * k_int if math.isfinite(gf.k) else math.nan
            if math.isfinite(e) and e < 0:
                warnings.append(f"EMMA projection of the {m_name} fit at {p} ranks is negative: clamped to 0")
                e = 0.0
            emma_points[m_name] = _num(e)
        predictions.append({"nranks": p, "factor": f, "intervals": k_int, "methods": methods,
                            "emma_maxima_fit_s": emma_points,
                            "emma_note": f"K x F^-1(0.570376002^(1/{f:g})) of the PWM, MOM and MLE fits to the pooled "
                                         "interval maxima (no interval; MLE for comparison only)"})

    # ---- measurements and accuracy
    meas_rows = []
    for s in measured:
        rt = s.runtime * (k_int / s.intervals)
        meas_rows.append({"source": s.source, "nranks": s.nranks, "intervals": s.intervals, "runtime_s": s.runtime,
                          "runtime_for_k_s": rt})
        if s.intervals != k_int:
            warnings.append(f"{s.source}: {s.intervals} intervals; its runtime is scaled to {k_int} intervals "
                            "for the comparison")
    accuracy = score(predictions, meas_rows) if meas_rows else []

    result.doc = {
        "schema": SCHEMA,
        "conventions": CONVENTIONS,
        "calibration": {
            "nranks": p0, "runs": [{"source": s.source, "kind": s.kind, "nranks": s.nranks, "intervals": s.intervals,
                                    "skipped": s.skipped, "runtime_s": s.runtime} for s in calib],
            "intervals": k_int, "maxima": n, "nodes": len(hosts), "ranks_per_node": g,
            "inter_node_units": len(inter), "intra_node_units": len(intra),
            "runtime_median_s": float(np.median([s.runtime for s in calib])),
        },
        "options": {"replicas": opts.replicas, "seed": opts.seed, "level": opts.level, "tail": opts.tail,
                    "type_replicas": opts.type_replicas, "scheme": opts.scheme, "methods": list(opts.methods)},
        "fits": fits,
        "diagnostics": diagnostics,
        "predictions": predictions,
        "measured": meas_rows,
        "accuracy": accuracy,
        "trust_guide": TRUST_GUIDE,
        "warnings": list(dict.fromkeys(warnings)),
    }
    return result


def _scheme(scheme: str, what: str) -> str:
    if scheme == "pooled":
        return f"pooled: each replica resamples the units and their values and fits all {what} together"
    return f"thesis: each replica resamples and fits one unit's {what}"


def score(predictions: list[dict[str, Any]], measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Accuracy of each method against measured runs at the predicted scales: coverage of the
    measured runtimes by the 95 % interval, median relative error of the predicted median, mean
    relative width of the interval (sharpness; smaller is better at equal coverage). EMMA point
    projections get the median relative error only. A prediction without a 95 % interval (a
    bound that is not finite) is left out of the scores and counted in `no_interval`."""
    by_p = {p["nranks"]: p for p in predictions}
    labels: list[str] = []
    for p in predictions:
        for m in p["methods"]:
            if m["label"] not in labels:
                labels.append(m["label"])
    out = []
    for label in labels:
        inside, errs, widths, per = 0, [], [], {}
        total = no_interval = 0
        for row in measured:
            pred = by_p.get(row["nranks"])
            m = next((m for m in pred["methods"] if m["label"] == label), None) if pred else None
            if m is None:
                continue
            if m["median_s"] is None or m["ci_low_s"] is None or m["ci_high_s"] is None:
                no_interval += 1
                continue
            y = row["runtime_for_k_s"]
            hit = m["ci_low_s"] <= y <= m["ci_high_s"]
            err = abs(m["median_s"] - y) / y
            total += 1
            inside += hit
            errs.append(err)
            widths.append((m["ci_high_s"] - m["ci_low_s"]) / m["median_s"] if m["median_s"] else math.nan)
            d = per.setdefault(row["nranks"], {"nranks": row["nranks"], "measured": 0, "inside": 0, "errors": []})
            d["measured"] += 1
            d["inside"] += hit
            d["errors"].append(err)
        if not total:
            continue
        out.append({"label": label, "measured": total, "inside": inside, "coverage": inside / total,
                    "median_rel_error": float(np.median(errs)), "mean_rel_width": _num(float(np.nanmean(widths))),
                    "no_interval": no_interval,
                    "per_scale": [{"nranks": d["nranks"], "measured": d["measured"], "inside": d["inside"],
                                   "coverage": d["inside"] / d["measured"],
                                   "median_rel_error": float(np.median(d["errors"]))} for d in per.values()]})
    for fit in ("PWM", "MOM", "MLE"):
        errs = []
        for row in measured:
            pred = by_p.get(row["nranks"])
            v = pred["emma_maxima_fit_s"].get(fit) if pred else None
            if v is not None:
                errs.append(abs(v - row["runtime_for_k_s"]) / row["runtime_for_k_s"])
        if errs:
            out.append({"label": f"EMMA point / {fit}", "measured": len(errs), "inside": None, "coverage": None,
                        "median_rel_error": float(np.median(errs)), "mean_rel_width": None, "no_interval": 0,
                        "per_scale": []})
    return out


# ------------------------------------------------------------------------------------ text
def render_text(doc: dict[str, Any]) -> str:
    """The human-readable report of an analysis document."""
    c = doc["calibration"]
    out = []
    runs = c["runs"]
    skipped = sorted({r["skipped"] for r in runs})
    out.append(f"mpilens model variability: calibration {len(runs)} run{'s' if len(runs) != 1 else ''} at {c['nranks']} "
               f"ranks ({c['nodes']} host{'s' if c['nodes'] != 1 else ''}, {c['ranks_per_node']} ranks per host), "
               f"{c['intervals']} intervals per run (first {','.join(map(str, skipped))} skipped), {c['maxima']} "
               f"interval maxima; runtime {c['runtime_median_s']:.6g} s (median)")
    out.append("")
    out.append("GEV fits of the interval maxima (Hosking's sign: k > 0 Type III Weibull, k < 0 Type II Frechet, "
               "Type I when |k| is within the half-width of its 95 % bootstrap interval; KS p: Kolmogorov-Smirnov "
               "test of the fit):")
    out.append(f"  {'data':<44} {'n':>6}  {'fit':<4} {'k':>8} {'loc':>11} {'scale':>11} {'type':>4}  {'KS p':>6}")
    for f in doc["fits"]:
        for m in ("PWM", "MOM", "MLE"):
            d = f[m]
            data = _short(f["data"], 44) if m == "PWM" else ""
            ks = "" if d.get("ks_pvalue") is None else f"{d['ks_pvalue']:.3f}"
            out.append(f"  {data:<44} {f['n'] if m == 'PWM' else '':>6}  {m:<4} {_g(d['shape_k']):>8} {_g(d['loc']):>11} "
                       f"{_g(d['scale']):>11} {d['type']:>4}  {ks:>6}")
        verdict = ("agree" if f["types_equal"] else "agree (shapes within tolerance)") if f["types_agree"] else "DISAGREE"
        out.append(f"  {'':<44} {'':>6}  PWM and MOM types {verdict} (Type I band |k| <= {f['type_tolerance']:.3g})")
    d = doc["diagnostics"]
    corr = d["rank_correlation"]
    out.append("")
    out.append(f"Diagnostics: PWM/MOM type agreement in every run: {'yes' if d['pwm_mom_types_agree'] else 'NO'}; "
               f"cross-rank correlation of interval times: {'n/a' if corr is None else f'{corr:.3f}'}; "
               f"{d['maxima_per_predicted_run']:.3g} calibration maxima per predicted interval")
    out.append("")
    out.append(f"Predicted runtime of one run of {c['intervals']} intervals: median [95 % interval of the run's runtime] "
               "{expected runtime K x EMMA: median [95 % CI]}")
    for p in doc["predictions"]:
        out.append(f"  {p['nranks']} ranks (x{p['factor']:g}):")
        for m in p["methods"]:
            trust = "trusted" if m["trusted"] else "caution"
            out.append(f"    {m['label']:<30} {_s(m['median_s'])} [{_s(m['ci_low_s'])}, {_s(m['ci_high_s'])}]  "
                       f"{{{_s(m['expected_median_s'])} [{_s(m['expected_ci_low_s'])}, {_s(m['expected_ci_high_s'])}]}}  "
                       f"{trust}: {'; '.join(m['trust_reasons'])}")
            out.append(f"      from: {m['bootstrap']}")
        e = p["emma_maxima_fit_s"]
        out.append("    EMMA point projections of the maxima fits (no interval): "
                   + ", ".join(f"{k} {_s(v)}" for k, v in e.items()))
    if doc["measured"]:
        out.append("")
        out.append("Measured runs:")
        for r in doc["measured"]:
            out.append(f"  {r['nranks']:>6} ranks  {_s(r['runtime_for_k_s'])}  {r['source']}")
        out.append("")
        out.append("Accuracy (coverage: measured runtimes inside the 95 % interval; error: |median - measured| / "
                   "measured, median over runs; width: interval width / median):")
        out.append(f"  {'method':<30} {'coverage':>12} {'median error':>13} {'width':>8}   per scale (coverage, error)")
        for a in doc["accuracy"]:
            cov = "-" if a["coverage"] is None else f"{a['inside']}/{a['measured']} {a['coverage']:.0%}"
            w = "-" if a["mean_rel_width"] is None else f"{a['mean_rel_width']:.1%}"
            per = ", ".join(f"{s['nranks']}: {s['inside']}/{s['measured']} {s['median_rel_error']:.1%}"
                            for s in a["per_scale"])
            skipped = (f" ({a['no_interval']} run{'s' if a['no_interval'] != 1 else ''} without a 95 % interval "
                       "left out)" if a.get("no_interval") else "")
            out.append(f"  {a['label']:<30} {cov:>12} {a['median_rel_error']:>12.2%} {w:>8}   {per}{skipped}")
    out.append("")
    out.append("When to trust each method:")
    for t in doc["trust_guide"]:
        out.append(f"  - {t}")
    if doc["warnings"]:
        out.append("")
        out.append("Warnings:")
        for w in doc["warnings"]:
            out.append(f"  - {w}")
    return "\n".join(out) + "\n"


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else "..." + s[-(n - 3):]


def _g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.5g} s"


# ------------------------------------------------------------------------------------ plot
def plot(result: Result, path: str, title: str | None = None) -> None:
    """Predicted (median and 95 % interval per method) vs measured runtimes per scale."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    doc = result.doc
    fig = Figure(figsize=(9, 5), dpi=150)
    ax = fig.add_subplot()
    labels = [m["label"] for m in doc["predictions"][0]["methods"]] if doc["predictions"] else []
    colors = ["#4c72b0", "#dd8452", "#c44e52", "#55a868", "#8172b3", "#937860", "#da8bc3"]
    nlab = max(len(labels), 1)
    no_interval = 0
    for i, label in enumerate(labels):
        xs, ys, lo, hi = [], [], [], []
        for p in doc["predictions"]:
            m = next((m for m in p["methods"] if m["label"] == label), None)
            if m is None or m["median_s"] is None:
                continue
            if m["ci_low_s"] is None or m["ci_high_s"] is None:
                no_interval += 1  # a bound that is not finite: no error bar to draw
                continue
            xs.append(p["nranks"] * 2 ** ((i - (nlab - 1) / 2) * 0.06))
            ys.append(m["median_s"])
            lo.append(m["median_s"] - m["ci_low_s"])
            hi.append(m["ci_high_s"] - m["median_s"])
        acc = next((a for a in doc.get("accuracy", []) if a["label"] == label), None)
        shown = label + (f" (covers {acc['inside']}/{acc['measured']}, median error {acc['median_rel_error']:.1%})"
                         if acc and acc["coverage"] is not None else "")
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", ms=4, capsize=3, color=colors[i % len(colors)], label=shown)
    c = doc["calibration"]
    ax.scatter([c["nranks"]] * len(c["runs"]), [r["runtime_s"] * c["intervals"] / r["intervals"] for r in c["runs"]],
               marker="s", color="grey", zorder=3, label="calibration runs")
    if doc["measured"]:
        ax.scatter([r["nranks"] for r in doc["measured"]], [r["runtime_for_k_s"] for r in doc["measured"]],
                   marker="x", color="black", zorder=4, s=40, label="measured runs")
    ax.set_xscale("log", base=2)
    scales = sorted({c["nranks"]} | {p["nranks"] for p in doc["predictions"]})
    ax.set_xticks(scales)
    ax.set_xticklabels([str(s) for s in scales])
    ax.set_xlabel("ranks")
    ax.set_ylabel(f"runtime of {c['intervals']} intervals (s)")

    title = title or "Predicted (median, 95 % interval) vs measured runtime"
    if no_interval:
        title += f" ({no_interval} prediction{'s' if no_interval != 1 else ''} without a finite 95 % interval not drawn)"
    ax.set_title("\n".join(textwrap.wrap(title, 100)), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
