"""Test vectors of the thesis (seeds/004, tests/data/seed-004/expected.json) and exact checks of the
GEV formulas (errata applied: MOM scale exponent 1/2, PWM on b0/b1/b2, Hosking's sign) against
scipy.stats.genextreme."""

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from conftest import MPILENS
from mpilens.model import emma, gev
from mpilens.model import partitioned as pm

DATA = Path(__file__).parent / "data" / "seed-004"
EXPECTED = json.loads((DATA / "expected.json").read_text())


# ------------------------------------------------------------------------------------ EMMA
def test_emma_thesis_example():
    e = EXPECTED["emma"][0]
    got = float(emma.normal(e["mu_us"], e["sigma_us"], e["m"]))
    assert abs(got - e["expected_max_us"]) <= e["tolerance_us"], got
    # the same number through the generic form and scipy's normal quantile
    assert float(emma.emma(stats.norm(e["mu_us"], e["sigma_us"]).ppf, e["m"])) == pytest.approx(got, abs=1e-6)


def test_emma_constant_is_the_gumbel_one():
    # 0.570376002 = exp(-exp(-gamma)): EMMA is exact for the Gumbel distribution
    assert emma.P_EMMA == pytest.approx(math.exp(-math.exp(-np.euler_gamma)), abs=1e-9)
    for m in (1, 4, 100, 4096):
        exact = 3.0 + 2.0 * (np.euler_gamma + math.log(m))  # E[max of m Gumbel(3, 2)]
        assert float(emma.gev_emma(0.0, 3.0, 2.0, m)) == pytest.approx(exact, rel=1e-8)


# ------------------------------------------------------------------------------------ partitioned
def test_partitioned_worked_example():
    w = EXPECTED["partitioned_worked_example"]
    table = pm.constant_table(w["alpha_us"], w["beta_MBps"])
    size = w["buffer_MB"] * 1e6  # MB = 10^6 bytes: 16 MB / 10,000 MB/s = 1,600 us
    r = pm.algorithm1(table, [size], w["threads"], w["mu_us"], w["sigma_us"], w["t_wait_us"])
    s, p = w["single_send"], w["partitioned"]
    assert r["t_single_us"][0] == pytest.approx(s["t_send_us"], rel=1e-9)
    assert r["bw_single"][0] == pytest.approx(s["bw_MBps"], rel=s["tolerance_rel"])
    assert r["t_message_us"][0] == pytest.approx(p["t_message_us"], rel=1e-9)
    assert float(r["spread_us"]) == pytest.approx(p["overlap_spread_us"], abs=1.0)
    assert r["overlap_messages"][0] == p["messages_overlapped"]
    assert r["t_extra_us"][0] == pytest.approx(p["t_extra_us"], rel=1e-9)
    assert r["bw_partitioned"][0] == pytest.approx(p["bw_MBps"], rel=p["tolerance_rel"])


def test_partitioned_worked_example_cli():
    w = EXPECTED["partitioned_worked_example"]
    out = subprocess.run([str(MPILENS), "model", "partitioned", "--postal", f"{w['alpha_us']},{w['beta_MBps']}",
                          "--threads", "4", "--compute-ms", "100", "--variability", "0.1", "--t-wait-us", "0",
                          "--sizes", "16MB", "--json"], capture_output=True, text=True, check=True).stdout
    top = json.loads(out)
    assert "Algorithm 1" in top["method"]
    (doc,) = top["models"]
    (row,) = doc["sizes"]
    assert doc["parameters"]["sigma_us"] == pytest.approx(1000.0)  # thesis rule: 100 ms x 0.1^2
    assert row["bw_single_MBps"] == pytest.approx(9969, rel=0.002)
    assert row["bw_partitioned_MBps"] == pytest.approx(39506, rel=0.002)


@pytest.mark.parametrize("pub", [p for p in EXPECTED["partitioned_model_curves"]["published"]
                                 if p["system"] == "lassen"], ids=lambda p: f"lassen-{p['variability']}")
def test_lassen_model_peaks(pub):
    table = pm.load_table(DATA / "osu_internode.csv", "lassen")
    sizes = pm.parse_sizes(None)  # 9 x 2^k MiB
    r = pm.algorithm1(table, sizes, pub["threads"], 100_000.0, pm.sigma_of(100_000.0, pub["variability"]), 10.0)
    s = pm.curve_summary(sizes, r["bw_partitioned"], r["bw_single"])
    tol = EXPECTED["partitioned_model_curves"]["tolerance_rel_on_lassen_peaks"]
    assert s["peak_MiBps"] == pytest.approx(pub["model_peak_MiBps"], rel=tol)
    assert s["peak_size_bytes"] / pm.MIB == pub["model_peak_buffer_MB"]
    # partitioning collapses back towards single-send at very large buffers
    assert r["bw_partitioned"][-1] / r["bw_single"][-1] < 1.1


def test_table_interpolation_and_columns(tmp_path):
    t = pm.load_table(DATA / "osu_internode.csv", "quartz")
    assert float(t.latency(65536)) == pytest.approx(22.05)
    assert float(t.bandwidth(1 << 30)) == pytest.approx(12328.31)  # clamped to the last row
    mid = float(t.latency(math.sqrt(65536 * 131072)))
    assert mid == pytest.approx(math.sqrt(22.05 * 30.81), rel=1e-9)  # log-log interpolation
    with pytest.raises(pm.MpilensError, match="--system"):
        pm.load_table(DATA / "osu_internode.csv")
    intra = pm.load_table(DATA / "osu_intranode.csv", "lassen")  # Table A.2
    assert float(intra.bandwidth(4 << 20)) == pytest.approx(28233.5)
    own = tmp_path / "pp.csv"
    own.write_text("# comment\nsize_bytes,latency_us,bandwidth_MBps\n1,1.0,1.0\n1024,2.0,500.0\n")
    assert float(pm.load_table(own).postal(1024)) == pytest.approx(2.0 + 1024 / 500.0)


def test_sizes_parsing():
    assert list(pm.parse_sizes("1KiB..8KiB")) == [1024, 2048, 4096, 8192]
    assert list(pm.parse_sizes("16MB,4096")) == [4096, 16e6]
    with pytest.raises(pm.MpilensError):
        pm.parse_sizes("12 parsecs")


# ------------------------------------------------------------------------------------ GEV exactness
@pytest.mark.parametrize("k", [-0.3, -0.1, 0.0, 0.15, 0.4])
def test_distribution_functions_match_scipy(k):
    p = np.array([1e-6, 0.01, 0.3, 0.5, 0.9, 0.999])
    ref = stats.genextreme(k, loc=2.0, scale=0.5)
    assert np.allclose(gev.ppf(p, k, 2.0, 0.5), ref.ppf(p), rtol=1e-10)
    x = ref.ppf(p)
    assert np.allclose(gev.cdf(x, k, 2.0, 0.5), p, rtol=1e-9)
    assert float(gev.mean(k, 2.0, 0.5)) == pytest.approx(ref.mean(), rel=1e-10)
    # max-stability: the max of m draws has CDF F^m
    k2, loc2, s2 = gev.max_of(64, k, 2.0, 0.5)
    assert np.allclose(gev.cdf(x, k2, loc2, s2), ref.cdf(x) ** 64, rtol=1e-9, atol=1e-300)
    # the GEV type in Hosking's sign: k > 0 bounded above (Weibull), k < 0 Frechet
    assert gev.gev_type(k) == {True: "I", False: "III" if k > 0 else "II"}[k == 0]


@pytest.mark.parametrize("k", [-0.3, -0.2, -0.05, 0.0, 0.2, 0.5, 1.0, 2.0])
def test_mom_skewness_equation_is_scipys(k):
    # Eq. 2.2 with sign(k), in Hosking's sign, is the GEV skewness
    assert float(gev.skewness_of_k(k)) == pytest.approx(float(stats.genextreme.stats(k, moments="s")), rel=1e-6)


@pytest.mark.parametrize("k", [-0.3, -0.15, 0.0, 0.1, 0.3, 0.8])
def test_mom_recovers_parameters_from_exact_moments(k):
    # feed the population mean, sd and skewness of scipy's GEV through the MOM equations: the
    # corrected scale equation (exponent 1/2) gives the parameters back exactly
    ref = stats.genextreme(k, loc=10.0, scale=2.0)
    mean, var, skew = (float(v) for v in ref.stats(moments="mvs"))
    kk, clamped = gev.k_from_skewness(skew)
    assert not clamped and float(kk) == pytest.approx(k, abs=2e-6)
    # a 3-point sample with those moments would need ddof handling; use the closed forms directly
    g1, g2 = math.gamma(1 + k), math.gamma(1 + 2 * k)
    alpha = math.sqrt(var) * abs(k) / math.sqrt(g2 - g1 ** 2) if k else math.sqrt(var) * math.sqrt(6) / math.pi
    xi = mean - alpha / k * (1 - g1) if k else mean - np.euler_gamma * alpha
    assert alpha == pytest.approx(2.0, rel=1e-9) and xi == pytest.approx(10.0, rel=1e-9)
    # the printed exponent 3/2 would not (erratum)
    if k:
        wrong = math.sqrt(var) * abs(k) / (g2 - g1 ** 2) ** 1.5
        assert abs(wrong - 2.0) > 0.01


def _population_pwms(dist) -> tuple[float, float, float]:
    """beta_r = E[X F(X)^r] = int_0^1 x(F) F^r dF."""
    return tuple(integrate.quad(lambda u: dist.ppf(u) * u ** r, 0, 1, limit=200, epsabs=1e-12)[0]  # noqa: B023
                 for r in range(3))


@pytest.mark.parametrize("k", [-0.4, -0.2, 0.0, 0.1, 0.3, 0.5])
def test_pwm_recovers_parameters_from_population_pwms(k):
    # Hosking's estimator applied to the exact b0, b1, b2 of scipy's GEV: the shape is within the
    # polynomial approximation's error (9e-4 on [-0.5, 0.5]); scale and location follow
    ref = stats.genextreme(k, loc=10.0, scale=2.0)
    b0, b1, b2 = _population_pwms(ref)
    c = (2 * b1 - b0) / (3 * b2 - b0) - math.log(2) / math.log(3)
    kk = 7.8590 * c + 2.9554 * c * c
    assert kk == pytest.approx(k, abs=1e-3)
    # through the package: a huge sample's PWMs approach the population ones
    x = ref.rvs(size=400_000, random_state=np.random.default_rng(7))
    g = gev.fit_pwm(x)
    assert g.k == pytest.approx(k, abs=0.01)
    assert g.scale == pytest.approx(2.0, rel=0.01) and g.loc == pytest.approx(10.0, abs=0.02)


def test_pwm_sample_moments_definition():
    x = np.array([3.0, 1.0, 2.0, 5.0])
    b0, b1, b2 = gev.pwm_moments(x)
    s = np.sort(x)
    assert b0 == pytest.approx(s.mean())
    assert b1 == pytest.approx(np.mean([(i - 1) / 3 * s[i - 1] for i in range(1, 5)]))
    assert b2 == pytest.approx(np.mean([(i - 1) * (i - 2) / 6 * s[i - 1] for i in range(1, 5)]))


def test_jenkinson_convention_flip():
    g = gev.fit_pwm(stats.genextreme.rvs(0.2, size=5000, random_state=np.random.default_rng(1)))
    assert g.type == "III" and g.jenkinson_shape == -g.k and g.jenkinson_shape < 0


def test_degenerate_sample():
    for method in ("PWM", "MOM", "MLE"):
        g = gev.fit(np.full(10, 2.5), method)
        assert g.scale == 0 and g.loc == pytest.approx(2.5) and any("equal" in n for n in g.notes)
