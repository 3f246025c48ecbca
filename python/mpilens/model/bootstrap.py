"""Bootstrap predictions of the runtime of a bulk-synchronous program at a larger scale.

The quantity predicted is the runtime of one run of K intervals at P ranks,
R_P = sum_k max_{r < P} t[r, k] (each barrier-fenced interval lasts as long as its slowest rank).
Every method returns two sets of bootstrap replicas:

- `runtime`: the predictive distribution of R_P. Each replica b first rebuilds the model from a
  resampled calibration sample (sampling uncertainty), then draws the K interval maxima of one
  run at P ranks from it (the run's own interval-to-interval noise) and sums them. Its 2.5 /
  50 / 97.5 percentiles are the median prediction and the 95 % interval that measured runtimes
  are checked against.
- `expected`: the replicas of the expected runtime K E[max] (the thesis' CI: percentiles of the
  EMMA projections), i.e. without the run's own noise; narrower.

Methods (assumptions in each docstring): `nonparametric` (thesis Fig. 3.1), `parametric` (thesis
Fig. 3.2, used with inter-node and intra-node units; the thesis' one-unit-per-replica scheme or a
pooled cluster bootstrap), `hybrid` (beyond the thesis: empirical body, GEV tail). Runtimes are
never negative: draws below zero (possible with the unbounded lower tail of a Type III fit) are
clamped at zero and counted, and the caller warns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import emma, gev

_BUDGET = 4_000_000  # floats per working array


@dataclass
class Replicas:
    """Bootstrap replicas of one method at one target scale."""

    runtime: np.ndarray  # predictive replicas of one run's runtime (seconds)
    expected: np.ndarray  # replicas of the expected runtime K * E[interval maximum] (seconds)
    clamped_draws: int = 0  # interval draws below zero set to zero
    draws: int = 0
    clamped_expected: int = 0  # expected values below zero set to zero
    notes: list[str] = field(default_factory=list)

    def summary(self, level: float = 0.95) -> dict[str, float]:
        """Median and central `level` percentile interval of the runtime and expected replicas
        (positions n(1 - ci)/2 and n(1 + ci)/2 of the ordered replicas, as in the thesis)."""
        lo, hi = (1 - level) / 2, (1 + level) / 2
        r = np.quantile(self.runtime, [lo, 0.5, hi])
        e = np.quantile(self.expected, [lo, 0.5, hi])
        return {"median_s": float(r[1]), "ci_low_s": float(r[0]), "ci_high_s": float(r[2]),
                "expected_median_s": float(e[1]), "expected_ci_low_s": float(e[0]),
                "expected_ci_high_s": float(e[2])}


def _rows_per_chunk(cols: int) -> int:
    return max(1, _BUDGET // max(cols, 1))


def _clamp(x: np.ndarray) -> tuple[np.ndarray, int]:
    neg = x < 0
    n = int(np.count_nonzero(neg))
    return (np.where(neg, 0.0, x), n) if n else (x, 0)


def max_weights(n: int, factor: float) -> np.ndarray:
    """Weights w_i = (i/n)^f - ((i-1)/n)^f: E[max of f draws from the empirical distribution of
    n sorted values] = sum_i w_i x_(i) (exact for integer f, the max-stable extension otherwise)."""
    i = np.arange(n + 1, dtype=float) / n
    return np.diff(i ** factor)


def nonparametric(maxima: np.ndarray, factor: float, intervals: int, replicas: int,
                  rng: np.random.Generator) -> Replicas:
    """Non-parametric bootstrap (thesis Sec. 3.2.2, Fig. 3.1).

    Method: replica b resamples the n calibration maxima with replacement (M*), then each of the
    K intervals of one run at f = P / P0 times the calibration scale is the maximum of f values
    drawn from M* (sampled exactly as F*^-1(U^(1/f)), which is the thesis' "draw f maxima with
    replacement and keep the largest" for integer f and its max-stable extension otherwise);
    the replica's runtime is their sum; its expected runtime is K sum_i w_i M*_(i).
    Assumptions: the interval maxima are stationary and independent from interval to interval,
    and the maximum over P ranks behaves like the maximum of f independent calibration-scale
    maxima (f independent groups of P0 ranks). Nothing is assumed about the distribution.
    Limitation: a resampled maximum never exceeds the largest calibration maximum, so the
    prediction saturates when f approaches n (it is reliable for f <= n / 10, where a draw hits
    the sample maximum with probability 1 - (1 - 1/n)^f ~ f / n <= 0.1)."""
    m = np.sort(np.asarray(maxima, dtype=float))
    n = len(m)
    w = max_weights(n, factor)
    runtime, expected = np.empty(replicas), np.empty(replicas)
    step = _rows_per_chunk(max(n, intervals))
    for a in range(0, replicas, step):
        b = min(replicas, a + step)
        ms = np.sort(m[rng.integers(0, n, (b - a, n))], axis=1)
        lev = rng.random((b - a, intervals)) ** (1 / factor)
        pos = np.clip(np.ceil(lev * n).astype(np.int64) - 1, 0, n - 1)
        runtime[a:b] = np.take_along_axis(ms, pos, axis=1).sum(axis=1)
        expected[a:b] = intervals * (ms @ w)
    notes = []
    if factor > n / 10:
        notes.append(f"scale factor {factor:g} is above n/10 = {n / 10:g} calibration maxima: the resampled maxima "
                     "cannot exceed the largest observed one, so this prediction is likely too low")
    return Replicas(runtime, expected, 0, replicas * intervals, 0, notes)


def parametric(units: list[np.ndarray], m: float, intervals: int, per_unit: int, fit: str,
               rng: np.random.Generator, scheme: str = "thesis") -> Replicas:
    """Parametric bootstrap (thesis Sec. 3.2.2, Fig. 3.2), for inter-node or intra-node units.

    Units: inter-node, the per-interval maximum of one node's ranks; intra-node, the interval
    times of one rank slot (the i-th rank of every node), pooled over the nodes.
    Scheme "thesis": for each unit in turn, `per_unit` replicas each resample that unit's sample
    with replacement and fit a GEV to it by PWM or MOM (thesis: 8 nodes x 50 = 400 replicas
    inter-node, 32 ranks x 50 = 1600 intra-node; here per_unit = ceil(1000 / units) by default);
    the replicas of all units are pooled. Each replica sees one unit's data, so the interval holds
    the unit-to-unit heterogeneity plus the sampling error of a single unit: on homogeneous,
    independent units it is conservative (coverage near 100 % in simulations).
    Scheme "pooled" (beyond the thesis; a cluster bootstrap): each of units x per_unit replicas
    resamples the units with replacement, then each chosen unit's values with replacement, and
    fits the GEV to the pooled resample; the interval then reflects the uncertainty of the pooled
    estimate (and the heterogeneity between units through their resampling) and its coverage is
    close to nominal when the GEV describes the units (see docs/model.md).
    Projection, both schemes: EMMA gives the expected interval maximum at m units (m = P / ranks
    per node, or m = P): E_b = F_b^-1(0.570376002^(1/m)); the expected runtime is K E_b. The
    replica's runtime draws K interval maxima F_b^-1(U^(1/m)) (the maximum of m i.i.d. draws of
    the fitted GEV) and sums them.
    Assumptions: the m units at the target scale are i.i.d. copies of the fitted distribution
    (independent ranks or nodes, no internal synchronization), stationary intervals, and a GEV
    that describes the unit's sample."""
    if scheme not in ("thesis", "pooled"):
        raise ValueError(f"unknown scheme {scheme!r}")
    fitter = gev.ARRAY_FITTERS[fit.upper()]
    notes: list[str] = []
    good = [np.asarray(y, dtype=float) for y in units if len(y) >= 3]
    if len(good) < len(units):
        notes.append(f"{len(units) - len(good)} unit(s) with fewer than 3 values left out")
    if not good:
        return Replicas(np.array([math.nan]), np.array([math.nan]), 0, 0, 0, notes + ["no unit could be fitted"])
    if scheme == "pooled":
        n = min(len(y) for y in good)
        if any(len(y) != n for y in good):
            notes.append(f"units hold different numbers of values: each contributes its first {n} to the pooled "
                         "resamples")
        stack = np.stack([y[:n] for y in good])  # [units, n]
        u = len(good)

        def batches():
            total = per_unit * u
            step = _rows_per_chunk(max(u * n, intervals))
            for a in range(0, total, step):
                b = min(total, a + step)
                pick = rng.integers(0, u, (b - a, u, 1))
                within = rng.integers(0, n, (b - a, u, n))
                yield stack[pick, within].reshape(b - a, u * n)
    else:
        def batches():
            for y in good:
                n = len(y)
                step = _rows_per_chunk(max(n, intervals))
                for a in range(0, per_unit, step):
                    b = min(per_unit, a + step)
                    yield y[rng.integers(0, n, (b - a, n))]

    runtimes, expecteds = [], []
    clamped = clamped_e = draws = 0
    lev_m = float(emma.level(m))
    for sample in batches():
        k, xi, al, *_ = fitter(sample)
        e, ce = _clamp(gev.ppf(lev_m, k, xi, al))
        clamped_e += ce
        x = gev.ppf(rng.random((len(k), intervals)) ** (1 / m), k[:, None], xi[:, None], al[:, None])
        x, c = _clamp(x)
        clamped += c
        draws += x.size
        runtimes.append(x.sum(axis=1))
        expecteds.append(intervals * e)
    runtime = np.concatenate(runtimes)
    expected = np.concatenate(expecteds)
    infinite = int(np.count_nonzero(~np.isfinite(runtime)))
    if infinite:
        notes.append(f"{infinite} replicas drew an infinite maximum (heavy-tailed fit)")
        runtime = np.where(np.isnan(runtime), np.inf, runtime)
    return Replicas(runtime, expected, clamped, draws, clamped_e, notes)


def hybrid(maxima: np.ndarray, factor: float, intervals: int, replicas: int, rng: np.random.Generator,
           tail: float = 0.1, fit: str = "PWM") -> Replicas:
    """Hybrid bootstrap (beyond the thesis): empirical body, GEV tail.

    Method: replica b resamples the n calibration maxima (M*) as the non-parametric bootstrap
    does and fits a GEV G_b to M* by PWM (MOM if asked). Its quantile function is the empirical
    one of M* up to level q = 1 - n_t/n (n_t = max(5, ceil(tail n)) largest values) and, above
    it, the GEV tail conditioned on exceeding u = M*_(n - n_t):
    H^-1(p) = G^-1(G(u) + (p - q) / (1 - q) (1 - G(u))). Each of the K intervals at scale factor
    f is H^-1(U^(1/f)); the expected runtime is K H^-1(0.570376002^(1/f)) (EMMA).
    Assumptions: those of the non-parametric bootstrap for the body (no distribution family),
    plus a GEV shape for the largest maxima, which lets the prediction extrapolate beyond the
    largest observed maximum where the non-parametric method saturates (large f / n), while the
    bulk of the data keeps its empirical shape where a single GEV would be misspecified."""
    fitter = gev.ARRAY_FITTERS[fit.upper()]
    m = np.sort(np.asarray(maxima, dtype=float))
    n = len(m)
    nt = min(n - 1, max(5, math.ceil(tail * n)))
    q = (n - nt) / n
    runtime, expected = np.empty(replicas), np.empty(replicas)
    step = _rows_per_chunk(max(n, intervals))

    # no clamping at zero here, unlike the parametric bootstrap: the body's quantiles are resampled
    # maxima and the tail's are >= u (a resampled maximum), so no draw is below the smallest maximum
    # (>= 0: data.load rejects negative interval times)
    def quantile(ms: np.ndarray, k: np.ndarray, xi: np.ndarray, al: np.ndarray, lev: np.ndarray) -> np.ndarray:
        pos = np.clip(np.ceil(lev * n).astype(np.int64) - 1, 0, n - 1)
        body = np.take_along_axis(ms, pos, axis=1)
        u = ms[:, n - nt - 1][:, None]
        gu = gev.cdf(u, k[:, None], xi[:, None], al[:, None])
        p = np.clip(gu + (lev - q) / (1 - q) * (1 - gu), 1e-300, 1 - 1e-15)
        t = np.maximum(gev.ppf(p, k[:, None], xi[:, None], al[:, None]), u)
        t = np.where(np.isfinite(t), t, np.where(al[:, None] > 0, np.inf, u))
        return np.where(lev <= q, body, t)

    for a in range(0, replicas, step):
        b = min(replicas, a + step)
        ms = np.sort(m[rng.integers(0, n, (b - a, n))], axis=1)
        k, xi, al, *_ = fitter(ms)
        x = quantile(ms, k, xi, al, rng.random((b - a, intervals)) ** (1 / factor))
        runtime[a:b] = x.sum(axis=1)
        e = quantile(ms, k, xi, al, np.full((b - a, 1), float(emma.level(factor))))[:, 0]
        expected[a:b] = intervals * e
    return Replicas(runtime, expected, 0, replicas * intervals, 0, [])
