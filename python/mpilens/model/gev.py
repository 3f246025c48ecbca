"""The generalized extreme value (GEV) distribution and its estimators.

Convention: Hosking's sign (Hosking, Wallis & Wood 1985; the parameter `c` of
scipy.stats.genextreme), with shape k, location xi and scale alpha > 0:

    F(x) = exp(-[1 - k (x - xi) / alpha]^(1/k))     (k != 0)
    F(x) = exp(-exp(-(x - xi) / alpha))             (k == 0, Gumbel)

so k > 0 is the bounded upper tail (Type III, Weibull), k < 0 the heavy upper tail (Type II,
Frechet) and k = 0 the Gumbel (Type I). The thesis (seeds/004, Eq. 2.1) prints the
Jenkinson/Coles form whose shape is -k; `jenkinson_shape` converts.

Estimators (the corrected forms of the thesis' Eq. 2.2-2.8; see the errata in
notes/seed-004-variability-models.md):

- PWM (Hosking et al. 1985): from the sample probability-weighted moments b0, b1, b2 (unbiased
  plotting-position-free estimators over the order statistics),
      c = (2 b1 - b0) / (3 b2 - b0) - ln 2 / ln 3,   k = 7.8590 c + 2.9554 c^2,
      alpha = (2 b1 - b0) k / (Gamma(1 + k) (1 - 2^-k)),   xi = b0 + alpha (Gamma(1 + k) - 1) / k.
  The polynomial for k is Hosking's approximation, accurate to 9e-4 for -0.5 <= k <= 0.5.
- MOM (Madsen et al. 1997): k solves the skewness equation
      g = sign(k) [-G(1+3k) + 3 G(1+k) G(1+2k) - 2 G(1+k)^3] / [G(1+2k) - G(1+k)^2]^(3/2)
  for the sample skewness g (the function is strictly decreasing in k on (-1/3, inf), so the
  root is unique; it is found by inverting a tabulated curve and polishing with Newton steps,
  which finds the same minimum as the thesis' Nelder-Mead search from k = 0), then
      alpha = s |k| / [G(1+2k) - G(1+k)^2]^(1/2)      (the thesis prints the exponent 3/2: wrong)
      xi = m - (alpha / k) (1 - G(1+k)).
- MLE: scipy.stats.genextreme.fit started from the PWM estimate, for comparison only (unstable
  for 15 < n < 100, Hosking et al. 1985).

All fitting functions accept arrays of samples (..., n) and fit along the last axis, so that
bootstrap replicas are fitted at once.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def _gamma(x: Any) -> Any:
    """The gamma function, scipy's: loaded when a model is computed, so that the text report, which
    imports this module with its sections, does not load scipy (0.2 s of every report)."""
    from scipy.special import gamma

    return gamma(x)


EULER = 0.5772156649015329
GUMBEL_SKEW = 12 * math.sqrt(6) * 1.2020569031595942 / math.pi ** 3  # 1.13955
_LN2_LN3 = math.log(2) / math.log(3)
_K0 = 1e-6  # |k| below this is treated as the Gumbel limit
PWM_K_RANGE = (-0.5, 0.5)  # where Hosking's polynomial approximation holds
K_MIN = -0.99  # PWM shapes below this (infinite mean) are clipped here


# ------------------------------------------------------------------------------------ distribution
def ppf(p: Any, k: Any, loc: Any, scale: Any) -> np.ndarray:
    """Quantile x(p) = xi + alpha (1 - (-ln p)^k) / k (Gumbel limit at k = 0); broadcasts."""
    p, k, loc, scale = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (p, k, loc, scale)))
    y = -np.log(p)
    small = np.abs(k) < _K0
    ks = np.where(small, 1.0, k)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        body = (1 - y ** ks) / ks
    return loc + scale * np.where(small, -np.log(y), body)


def cdf(x: Any, k: Any, loc: Any, scale: Any) -> np.ndarray:
    """F(x) in Hosking's convention (0 or 1 outside the support); broadcasts."""
    x, k, loc, scale = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, k, loc, scale)))
    z = (x - loc) / np.where(scale > 0, scale, np.nan)
    small = np.abs(k) < _K0
    ks = np.where(small, 1.0, k)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t = 1 - ks * z
        inside = np.where(t > 0, np.exp(-np.where(t > 0, t, 1.0) ** (1 / ks)), np.where(ks > 0, 1.0, 0.0))
        out = np.where(small, np.exp(-np.exp(-z)), inside)
    return out


def mean(k: Any, loc: Any, scale: Any) -> np.ndarray:
    """E[X] = xi + alpha (1 - Gamma(1 + k)) / k for k > -1 (infinite for k <= -1)."""
    k, loc, scale = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (k, loc, scale)))
    small = np.abs(k) < _K0
    ks = np.where(small | (k <= -1), 1.0, k)
    m = loc + scale * np.where(small, EULER, (1 - _gamma(1 + ks)) / ks)
    return np.where(k <= -1, np.inf, m)


def max_of(m: Any, k: Any, loc: Any, scale: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parameters of the maximum of m i.i.d. GEV draws, again a GEV (max-stability):
    k' = k, alpha' = alpha m^-k, xi' = xi + alpha (1 - m^-k) / k (xi + alpha ln m at k = 0)."""
    m, k, loc, scale = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (m, k, loc, scale)))
    small = np.abs(k) < _K0
    ks = np.where(small, 1.0, k)
    mk = m ** (-ks)
    loc2 = loc + scale * np.where(small, np.log(m), (1 - mk) / ks)
    return k.copy(), loc2, scale * np.where(small, 1.0, mk)


def gev_type(k: float, lo: float | None = None, hi: float | None = None) -> str:
    """GEV type from the shape (Hosking sign): "I" (Gumbel) when the interval [lo, hi] of k
    contains 0 (or, without an interval, k == 0), "II" (Frechet, heavy upper tail) for k < 0,
    "III" (Weibull, bounded upper tail) for k > 0."""
    if not math.isfinite(k):
        return "?"
    if lo is not None and hi is not None and lo <= 0 <= hi:
        return "I"
    if k == 0:
        return "I"
    return "II" if k < 0 else "III"


TYPE_NAMES = {"I": "Type I (Gumbel)", "II": "Type II (Frechet)", "III": "Type III (Weibull)", "?": "unknown"}


@dataclass
class GEV:
    """A fitted GEV (Hosking's sign convention: k > 0 bounded upper tail)."""

    k: float
    loc: float
    scale: float
    method: str  # "PWM", "MOM", "MLE"
    n: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def jenkinson_shape(self) -> float:
        """The shape of the thesis' Eq. 2.1 (Jenkinson/Coles sign): -k."""
        return -self.k

    @property
    def type(self) -> str:
        """The GEV type of the fitted shape: "I" (Gumbel), "II" (Frechet) or "III" (Weibull); see gev_type."""
        return gev_type(self.k)

    def ppf(self, p: Any) -> np.ndarray:
        """Quantiles of the distribution at probabilities p."""
        return ppf(p, self.k, self.loc, self.scale)

    def cdf(self, x: Any) -> np.ndarray:
        """Cumulative distribution function at x."""
        return cdf(x, self.k, self.loc, self.scale)

    def mean(self) -> float:
        """Mean of the distribution."""
        return float(mean(self.k, self.loc, self.scale))

    def scipy(self):
        """The same distribution as a frozen scipy.stats.genextreme."""
        from scipy.stats import genextreme

        return genextreme(self.k, loc=self.loc, scale=self.scale)

    def to_dict(self) -> dict[str, Any]:
        """The fit as a JSON object (non-finite values as null)."""
        return {"method": self.method, "shape_k": _f(self.k), "loc": _f(self.loc), "scale": _f(self.scale),
                "shape_jenkinson": _f(-self.k), "n": self.n, "notes": self.notes}


def _f(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


# ------------------------------------------------------------------------------------ PWM
def pwm_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unbiased sample PWMs b0, b1, b2 along the last axis (Hosking et al. 1985):
    b_r = (1/n) sum_i [(i-1)...(i-r)] / [(n-1)...(n-r)] x_(i) over the ascending order
    statistics. Needs n >= 3."""
    x = np.sort(np.asarray(x, dtype=float), axis=-1)
    n = x.shape[-1]
    if n < 3:
        raise ValueError(f"PWM needs at least 3 values, got {n}")
    i = np.arange(1, n + 1, dtype=float)
    w1 = (i - 1) / (n - 1)
    w2 = (i - 1) * (i - 2) / ((n - 1) * (n - 2))
    return x.mean(axis=-1), (x * w1).mean(axis=-1), (x * w2).mean(axis=-1)


def fit_pwm_array(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """PWM estimates (k, xi, alpha, clipped) along the last axis. Degenerate samples (all values
    equal) give k = 0, alpha = 0. `clipped` marks shapes below -0.99 (population mean infinite)
    that were clipped there."""
    b0, b1, b2 = pwm_moments(x)
    l2 = 2 * b1 - b0  # the second L-moment
    den = 3 * b2 - b0
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(den > 0, l2 / np.where(den > 0, den, 1.0), np.nan) - _LN2_LN3
    k = 7.8590 * c + 2.9554 * c * c
    degenerate = ~(l2 > 0) | ~np.isfinite(k)
    k = np.where(degenerate, 0.0, k)
    clipped = k < K_MIN
    k = np.maximum(k, K_MIN)
    small = np.abs(k) < _K0
    ks = np.where(small, 1.0, k)
    g = _gamma(1 + ks)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(small, l2 / math.log(2), l2 * ks / (g * (1 - 2.0 ** (-ks))))
        xi = np.where(small, b0 - EULER * alpha, b0 + alpha * (g - 1) / ks)
    alpha = np.where(degenerate, 0.0, alpha)
    xi = np.where(degenerate, b0, xi)
    return k, xi, alpha, clipped


def fit_pwm(x: Any) -> GEV:
    """Fit a GEV to a 1-D sample by probability-weighted moments (Hosking et al. 1985).
    Assumes an i.i.d. sample of n >= 3; the shape approximation holds for |k| <= 0.5."""
    x = np.asarray(x, dtype=float).ravel()
    k, xi, a, clipped = (float(v) for v in fit_pwm_array(x))
    notes = []
    if clipped:
        notes.append(f"PWM shape below {K_MIN} (infinite mean) clipped to {K_MIN}")
    elif not PWM_K_RANGE[0] <= k <= PWM_K_RANGE[1]:
        notes.append(f"PWM shape k = {k:.3f} is outside [-0.5, 0.5], where Hosking's approximation holds")
    if a == 0:
        notes.append("all values are equal: degenerate fit")
    return GEV(k, xi, a, "PWM", len(x), notes)


# ------------------------------------------------------------------------------------ MOM
def skewness_of_k(k: Any) -> np.ndarray:
    """Skewness of a GEV with shape k (Hosking sign), Eq. 2.2 of the thesis; k > -1/3."""
    k = np.asarray(k, dtype=float)
    small = np.abs(k) < 1e-4
    ks = np.where(small, 1e-4, k)
    g1, g2, g3 = _gamma(1 + ks), _gamma(1 + 2 * ks), _gamma(1 + 3 * ks)
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.sign(ks) * (-g3 + 3 * g1 * g2 - 2 * g1 ** 3) / (g2 - g1 ** 2) ** 1.5
    return np.where(small, GUMBEL_SKEW, s)


K_MOM_RANGE = (-1 / 3 + 1e-3, 20.0)


def _skew_table() -> tuple[np.ndarray, np.ndarray]:
    lo, hi = K_MOM_RANGE
    ks = np.unique(np.concatenate([
        -1 / 3 + np.geomspace(1e-3, 1 / 3 - 1e-4, 1500),  # steep near -1/3
        np.linspace(-0.3, 1.0, 4000),
        np.geomspace(1.0, hi, 1500),
        [0.0],
    ]))
    ks = ks[(ks >= lo) & (ks <= hi) & ((np.abs(ks) >= 1e-4) | (ks == 0))]
    s = skewness_of_k(ks)
    ok = np.isfinite(s)
    return ks[ok], s[ok]


_TABLE: tuple[np.ndarray, np.ndarray] | None = None


def k_from_skewness(g: Any) -> tuple[np.ndarray, np.ndarray]:
    """Solve skewness_of_k(k) = g for k (vectorized); return (k, clamped) where clamped marks
    skewness values outside the table's range (k clamped to K_MOM_RANGE)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _skew_table()
    ks, s = _TABLE
    g = np.asarray(g, dtype=float)
    # s decreases with k: interpolate on the reversed arrays
    clamped = (g > s[0]) | (g < s[-1]) | ~np.isfinite(g)
    gc = np.clip(np.nan_to_num(g, nan=GUMBEL_SKEW), s[-1], s[0])
    k = np.interp(gc, s[::-1], ks[::-1])
    # polish with Newton steps on the (smooth, monotone) curve
    for _ in range(3):
        h = 1e-6 * np.maximum(1.0, np.abs(k))
        f0 = skewness_of_k(k) - gc
        d = (skewness_of_k(k + h) - skewness_of_k(k - h)) / (2 * h)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(np.isfinite(d) & (d != 0), f0 / d, 0.0)
        k_new = np.clip(k - step, *K_MOM_RANGE)
        k = np.where(np.isfinite(k_new) & ~clamped & (np.abs(k) >= 1e-4), k_new, k)
    return k, clamped


def fit_mom_array(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MOM estimates (k, xi, alpha, clamped) along the last axis from the sample mean, the
    standard deviation (ddof = 1) and the skewness g1 = m3 / m2^(3/2) (the moment estimator)."""
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1)
    d = x - mu[..., None]
    m2 = (d * d).mean(axis=-1)
    m3 = (d * d * d).mean(axis=-1)
    sd = x.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(m2 > 0, m3 / np.where(m2 > 0, m2, 1.0) ** 1.5, GUMBEL_SKEW)
    k, clamped = k_from_skewness(g)
    small = np.abs(k) < 1e-4
    ks = np.where(small, 1.0, k)
    g1, g2 = _gamma(1 + ks), _gamma(1 + 2 * ks)
    with np.errstate(invalid="ignore", over="ignore"):
        alpha = np.where(small, sd * math.sqrt(6) / math.pi, sd * np.abs(ks) / np.sqrt(g2 - g1 ** 2))
        xi = np.where(small, mu - EULER * alpha, mu - (alpha / ks) * (1 - g1))
    degenerate = ~(sd > 0)
    return np.where(degenerate, 0.0, k), np.where(degenerate, mu, xi), np.where(degenerate, 0.0, alpha), clamped


def fit_mom(x: Any) -> GEV:
    """Fit a GEV to a 1-D sample by the method of moments (Madsen et al. 1997), with the
    corrected scale equation (exponent 1/2). Assumes an i.i.d. sample; the sample skewness is
    biased low for small n, so MOM shapes of small samples lean towards Type III."""
    x = np.asarray(x, dtype=float).ravel()
    if len(x) < 3:
        raise ValueError(f"MOM needs at least 3 values, got {len(x)}")
    k, xi, a, clamped = (float(v) for v in fit_mom_array(x))
    notes = []
    if clamped:
        notes.append(f"sample skewness outside the range a GEV with k in [{K_MOM_RANGE[0]:.3f}, {K_MOM_RANGE[1]:g}] "
                     "can have: shape clamped")
    if a == 0:
        notes.append("all values are equal: degenerate fit")
    return GEV(k, xi, a, "MOM", len(x), notes)


# ------------------------------------------------------------------------------------ MLE
def fit_mle(x: Any) -> GEV:
    """Fit a GEV by maximum likelihood (scipy.stats.genextreme.fit, started from the PWM
    estimate). For comparison only: unstable for small samples (Hosking et al. 1985)."""
    from scipy.stats import genextreme

    x = np.asarray(x, dtype=float).ravel()
    start = fit_pwm(x)
    if start.scale == 0:
        return GEV(0.0, start.loc, 0.0, "MLE", len(x), ["all values are equal: degenerate fit"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c, loc, scale = genextreme.fit(x, start.k, loc=start.loc, scale=start.scale)
    except Exception as err:  # noqa: BLE001 - scipy raises various errors on hopeless data
        return GEV(math.nan, math.nan, math.nan, "MLE", len(x), [f"MLE failed: {err}"])
    notes = []
    if not np.isfinite(genextreme.logpdf(x, c, loc=loc, scale=scale)).all():
        notes.append("MLE solution leaves observations outside the support")
    return GEV(float(c), float(loc), float(scale), "MLE", len(x), notes)


FITTERS = {"PWM": fit_pwm, "MOM": fit_mom, "MLE": fit_mle}
ARRAY_FITTERS = {"PWM": fit_pwm_array, "MOM": fit_mom_array}


def fit(x: Any, method: str) -> GEV:
    """Fit by "PWM", "MOM" or "MLE"."""
    return FITTERS[method.upper()](x)


def shape_interval(x: Any, method: str, replicas: int = 200, rng: np.random.Generator | None = None,
                   level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the shape k (non-parametric resampling of x, PWM or
    MOM refits). Used to call the GEV type: Type I when the interval contains 0."""
    rng = rng or np.random.default_rng(0)
    x = np.asarray(x, dtype=float).ravel()
    idx = rng.integers(0, len(x), (replicas, len(x)))
    k = ARRAY_FITTERS[method.upper()](x[idx])[0]
    lo, hi = np.quantile(k, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
