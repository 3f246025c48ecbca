"""Performance model of partitioned (MPI-4 / Finepoints) sends: thesis Ch. 4, Algorithm 1.

N threads each compute for a normally distributed time and then mark their 1/N of a buffer of
`size` bytes ready; the partitioned send can transmit the ready partitions while the slower
threads still compute. The effective bandwidth is size / (t_finish - t_last_thread).

Algorithm 1 (as printed, with M_size computed per size; the thesis hoists it out of the loop):

    sigma = T_compute * variability^2          (the thesis' convention: "10 %" means sigma = 1 %
                                                of T_compute; sigma_rule="plain" uses T_compute * v)
    T_last  = EMMA(Normal(mu, sigma), N) = mu + sigma Phi^-1(0.570376002^(1/N))
    spread  = 2 (T_last - mu)                   (symmetry: the fastest thread ends at mu - (T_last - mu))
    T_msg   = postal(size / N)                  (OSU latency(M) + M / OSU bandwidth(M), M = size / N;
                                                 message_time="latency" uses latency(M) alone)
    M_ovl   = min(spread / T_msg, N - 1)        (messages sent while the slower threads compute;
                                                 fractional, not rounded)
    T_extra = T_msg (N - M_ovl) + T_wait
    E       = size / T_extra

Single-send baseline (Eq. 4.1-4.2): the threads join, then one message: size / postal(size).

Assumptions (thesis Sec. 4.3): even partitions, one message per thread, symmetric (normal) thread
times, Postal-model messages without contention, queueing or tag-matching cost, optimistic
back-to-back sending from the fastest thread's end, at least one message left when the slowest
thread ends.

Beyond the thesis:
- `monte_carlo`: samples the N thread times and sends the partitions one after another on one
  link as they become ready (start = max(ready, previous end)); it drops the optimistic
  "continuous sending" assumption (gaps between thread ends leave the link idle) and gives the
  mean of size / T_extra over samples, the quantity the benchmark averages.
- `aggregate`: an implementation that sends the whole buffer when the last partition is ready
  (MPICH 4.0's ch4 active-message path does this): size / (postal(size) + T_wait).

Units: sizes in bytes, times in microseconds, bandwidths in MB/s (10^6 bytes per second, as OSU;
bytes per microsecond). `mib_per_s` converts.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import units
from ..errors import MpilensError
from . import emma

MIB = 1 << 20


def mib_per_s(mb_per_s: Any) -> Any:
    """MB/s (10^6 B/s) to MiB/s (2^20 B/s)."""
    return np.asarray(mb_per_s) * 1e6 / MIB


# ------------------------------------------------------------------------------------ ping-pong table
@dataclass
class PingPongTable:
    """Latency (us) and bandwidth (MB/s) per message size (bytes), interpolated log-log between
    rows and clamped to the first and last rows outside the table (the recipe that reproduces the
    thesis' Lassen curves; OSU tables stop at 4 MiB while partitions reach hundreds of MB)."""

    size: np.ndarray
    latency_us: np.ndarray
    bandwidth_mbps: np.ndarray
    source: str = ""

    def __post_init__(self) -> None:
        order = np.argsort(self.size)
        self.size = np.asarray(self.size, dtype=float)[order]
        self.latency_us = np.asarray(self.latency_us, dtype=float)[order]
        self.bandwidth_mbps = np.asarray(self.bandwidth_mbps, dtype=float)[order]
        if len(self.size) == 0 or (self.size <= 0).any() or (self.latency_us <= 0).any() or \
                (self.bandwidth_mbps <= 0).any():
            raise MpilensError(f"{self.source or 'ping-pong table'}: sizes, latencies and bandwidths must be positive")

    def _interp(self, m: Any, y: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        if len(self.size) == 1:
            return np.full_like(m, y[0])
        return np.exp(np.interp(np.log(m), np.log(self.size), np.log(y)))

    def latency(self, m: Any) -> np.ndarray:
        """Latency (us) at message sizes m bytes, interpolated in the table."""
        return self._interp(m, self.latency_us)

    def bandwidth(self, m: Any) -> np.ndarray:
        """Bandwidth (MB/s) at message sizes m bytes, interpolated in the table."""
        return self._interp(m, self.bandwidth_mbps)

    def postal(self, m: Any, mode: str = "thesis") -> np.ndarray:
        """Message time (us) of m bytes.
        "thesis": latency(m) + m / bandwidth(m), the Postal model with the OSU latency and
        bandwidth at that size, as the thesis' Algorithm 1 is fed (it reproduces the published
        Lassen curves). An OSU latency is already the one-way time of an m-byte message, so this
        counts the transfer twice for large m.
        "latency": the one-way time of the table itself, latency(m), extended beyond the largest
        row M by (m - M) / bandwidth(M)."""
        m = np.asarray(m, dtype=float)
        if mode == "thesis":
            return self.latency(m) + m / self.bandwidth(m)
        if mode == "latency":
            top = self.size[-1]
            return self.latency(np.minimum(m, top)) + np.maximum(m - top, 0.0) / self.bandwidth_mbps[-1]
        raise MpilensError(f"unknown message-time mode {mode!r} (thesis or latency)")


def constant_table(alpha_us: float, beta_mbps: float) -> PingPongTable:
    """A size-independent Postal model alpha + s / beta (the thesis' worked example)."""
    return PingPongTable(np.array([1.0]), np.array([alpha_us]), np.array([beta_mbps]), f"alpha={alpha_us} us, "
                         f"beta={beta_mbps} MB/s")


def load_table(path: str | Path, system: str | None = None) -> PingPongTable:
    """Read a ping-pong CSV: size_bytes and latency_us, bandwidth_MBps columns (as written by
    `mpilens bench pingpong`), or SYSTEM_latency_us and SYSTEM_bandwidth_MBps for a table of
    several systems (the thesis' OSU tables: lassen, quartz)."""
    p = Path(path)
    try:
        with p.open(newline="") as fh:
            rows = [r for r in csv.DictReader(line for line in fh if not line.startswith("#"))]
    except OSError as err:
        raise MpilensError(f"{p}: cannot read the ping-pong table ({err.strerror})") from err
    if not rows:
        raise MpilensError(f"{p}: empty ping-pong table")
    cols = list(rows[0].keys())
    prefix = f"{system}_" if system else ""
    lat, bw = f"{prefix}latency_us", f"{prefix}bandwidth_MBps"
    if "size_bytes" not in cols or lat not in cols or bw not in cols:
        systems = sorted({c[: -len("_latency_us")] for c in cols if c.endswith("_latency_us")})
        hint = f"; choose one with --system ({', '.join(systems)})" if systems and not system else ""
        raise MpilensError(f"{p}: expected columns size_bytes, {lat}, {bw}; found {', '.join(cols)}{hint}")
    try:
        size = np.array([float(r["size_bytes"]) for r in rows])
        latency = np.array([float(r[lat]) for r in rows])
        bandwidth = np.array([float(r[bw]) for r in rows])
    except (TypeError, ValueError) as err:
        raise MpilensError(f"{p}: a value is not a number ({err})") from err
    return PingPongTable(size, latency, bandwidth, str(p) + (f" [{system}]" if system else ""))


# ------------------------------------------------------------------------------------ model
def sigma_of(compute_us: float, variability: float, rule: str = "thesis") -> float:
    """Standard deviation of the thread time: T v^2 (the thesis' Algorithms 1 and 2, "thesis")
    or T v ("plain")."""
    if rule == "thesis":
        return compute_us * variability ** 2
    if rule == "plain":
        return compute_us * variability
    raise MpilensError(f"unknown sigma rule {rule!r} (thesis or plain)")


def algorithm1(table: PingPongTable, sizes: Any, threads: int, compute_us: float, sigma_us: float,
               t_wait_us: float = 10.0, message_time: str = "thesis") -> dict[str, np.ndarray]:
    """Algorithm 1 for every buffer size (bytes); also the single-send and aggregate baselines.
    Returns arrays (us, MB/s) keyed t_message_us, overlap_messages, t_extra_us, bw_partitioned,
    bw_single, bw_aggregate, plus scalars t_last_us and spread_us."""
    sizes = np.asarray(sizes, dtype=float)
    n = int(threads)
    if n < 1:
        raise MpilensError("threads must be at least 1")
    t_last = float(emma.normal(compute_us, sigma_us, n)) if n > 1 else compute_us
    spread = 2 * (t_last - compute_us)
    t_msg = table.postal(sizes / n, message_time)
    m_ovl = np.minimum(spread / t_msg, n - 1)
    t_extra = t_msg * (n - m_ovl) + t_wait_us
    t_single = table.postal(sizes, message_time)
    return {"size_bytes": sizes, "message_bytes": sizes / n, "t_message_us": t_msg, "overlap_messages": m_ovl,
            "t_extra_us": t_extra, "bw_partitioned": sizes / t_extra, "t_single_us": t_single,
            "bw_single": sizes / t_single, "bw_aggregate": sizes / (t_single + t_wait_us),
            "t_last_us": np.float64(t_last), "spread_us": np.float64(spread)}


def monte_carlo(table: PingPongTable, sizes: Any, threads: int, compute_us: float, sigma_us: float,
                t_wait_us: float = 10.0, samples: int = 2000, rng: np.random.Generator | None = None,
                message_time: str = "thesis") -> dict[str, np.ndarray]:
    """Gap-aware Monte-Carlo version of Algorithm 1: per sample, N thread times from
    Normal(mu, sigma) (truncated at 0), partitions sent one at a time on one link in the order the
    threads end (start = max(ready, previous end), Postal time each); T_extra = last end - last
    thread end + T_wait. Returns the mean of size / T_extra over samples (the benchmark's
    averaged effective bandwidth) and the mean T_extra. Assumes independent thread times and one
    serial link without contention."""
    rng = rng or np.random.default_rng(0)
    sizes = np.asarray(sizes, dtype=float)
    n = int(threads)
    t = np.sort(np.maximum(rng.normal(compute_us, sigma_us, (samples, n)), 0.0), axis=1)
    bw = np.empty(len(sizes))
    te = np.empty(len(sizes))
    for j, s in enumerate(sizes):
        tm = float(table.postal(s / n, message_time))
        end = np.full(samples, -np.inf)
        for i in range(n):
            end = np.maximum(t[:, i], end) + tm
        extra = end - t[:, -1] + t_wait_us
        bw[j] = float(np.mean(s / extra))
        te[j] = float(np.mean(extra))
    return {"bw_monte_carlo": bw, "t_extra_mc_us": te}


def curve_summary(sizes: np.ndarray, bw: np.ndarray, baseline: np.ndarray) -> dict[str, Any]:
    """Peak (size, MB/s, MiB/s) and the overperformance region: the sizes where bw > baseline."""
    i = int(np.argmax(bw))
    over = sizes[bw > baseline]
    return {"peak_size_bytes": float(sizes[i]), "peak_MBps": float(bw[i]), "peak_MiBps": float(mib_per_s(bw[i])),
            "over_single_send_bytes": [float(over.min()), float(over.max())] if len(over) else None}


# ------------------------------------------------------------------------------------ sizes
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 1 << 10, "m": 1e6, "mb": 1e6, "mib": MIB, "g": 1e9,
          "gb": 1e9, "gib": 1 << 30}


def parse_size(text: str) -> float:
    """"4096", "64KiB", "1.5MB", "9MiB" -> bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise MpilensError(f"bad size {text!r} (e.g. 4096, 64KiB, 1MB, 9MiB)")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def parse_sizes(text: str | None) -> np.ndarray:
    """Comma-separated sizes; "A..B" is every power-of-two multiple of A up to B. Default: the
    thesis' grid 9 x 2^k MiB, 0.28 MiB to 4.5 GiB."""
    if not text:
        return np.array([9 * 2.0 ** k * MIB for k in range(-5, 10)])
    out: list[float] = []
    for part in text.split(","):
        if ".." in part:
            a, b = (parse_size(x) for x in part.split("..", 1))
            if a <= 0 or b < a:
                raise MpilensError(f"bad size range {part!r}")
            v = a
            while v <= b * (1 + 1e-12):
                out.append(v)
                v *= 2
        else:
            out.append(parse_size(part))
    if any(v <= 0 for v in out):
        raise MpilensError("sizes must be positive")
    return np.array(sorted(set(out)))


# ------------------------------------------------------------------------------------ measurements
def load_measurements(path: str | Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Read the CSV of examples/c/partitioned_bench (columns mode, threads, size_bytes, rep,
    elapsed_us, bw_MBps; '#' lines are comments; several runs may be concatenated); return per
    (mode, threads, size) the mean effective bandwidth over repetitions (the thesis' averaging),
    its standard deviation and the count."""
    p = Path(path)
    try:
        with p.open(newline="") as fh:
            rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    except OSError as err:
        raise MpilensError(f"{p}: cannot read the benchmark results ({err.strerror})") from err
    need = {"mode", "threads", "size_bytes", "elapsed_us", "bw_MBps"}
    if not rows or not need <= set(rows[0]):
        raise MpilensError(f"{p}: expected the columns {', '.join(sorted(need))} of partitioned_bench")
    groups: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
    for r in rows:
        if r.get("mode") in (None, "mode") or not r.get("bw_MBps"):
            continue  # a repeated header of concatenated runs
        try:
            key = (r["mode"], int(r["threads"]), int(float(r["size_bytes"])))
            groups.setdefault(key, []).append((float(r["bw_MBps"]), float(r["elapsed_us"])))
        except ValueError as err:
            raise MpilensError(f"{p}: a value is not a number ({err})") from err
    out = {}
    for key, v in groups.items():
        bw = np.array([x[0] for x in v])
        el = np.array([x[1] for x in v])
        out[key] = {"mode": key[0], "threads": key[1], "size_bytes": key[2], "reps": len(v),
                    "bw_mean_MBps": float(bw.mean()), "bw_sd_MBps": float(bw.std(ddof=1)) if len(v) > 1 else 0.0,
                    "bw_q25_MBps": float(np.quantile(bw, 0.25)), "bw_q75_MBps": float(np.quantile(bw, 0.75)),
                    "elapsed_mean_us": float(el.mean())}
    return out


METHOD = ("Algorithm 1 of Dominguez-Trujillo 2021 (EMMA slowest thread, symmetric fastest thread, Postal messages "
          "from the ping-pong table, optimistic overlap); Monte Carlo: gap-aware serial sends of sampled thread times; "
          "single-send: size / postal(size); send-when-all-ready: size / (postal(size) + T_wait)")
UNITS = {"size": "bytes", "time": "microseconds", "bandwidth": "MB/s (10^6 bytes/s); x 0.9537 for MiB/s"}
MEASURED_MODES = {"partitioned": ("#c44e52", "s", "MPI-4 partitioned of this MPI"),
                  "pcl": ("#55a868", "D", "partitions as persistent point-to-point sends (MPIPCL's way)"),
                  "single": ("#4c72b0", "^", "single send after the threads join")}


def _draw(ax: Any, doc: dict[str, Any], legend: bool) -> None:
    rows = doc["sizes"]
    x = np.array([r["size_bytes"] for r in rows]) / MIB

    def col(key: str) -> np.ndarray:
        return mib_per_s(np.array([np.nan if r.get(key) is None else r[key] for r in rows], dtype=float))

    ax.plot(x, col("bw_partitioned_MBps"), "-o", ms=3, color="#c44e52", label="partitioned model (Algorithm 1)")
    if rows and rows[0].get("bw_monte_carlo_MBps") is not None:
        ax.plot(x, col("bw_monte_carlo_MBps"), "--", color="#c44e52", alpha=0.7,
                label="partitioned model, Monte Carlo (gap-aware)")
    ax.plot(x, col("bw_single_MBps"), "-", color="#4c72b0", label="single-send model (Postal)")
    ax.plot(x, col("bw_aggregate_MBps"), ":", color="#4c72b0", label="send-when-all-ready model")
    ax.plot(x, col("pingpong_bw_MBps"), "-", color="grey", alpha=0.5, label="ping-pong bandwidth (table)")
    for mode, (color, marker, what) in MEASURED_MODES.items():
        pts = [(r["size_bytes"] / MIB, r["measured"][mode]) for r in rows if r.get("measured", {}).get(mode)]
        if pts:
            xs = np.array([p[0] for p in pts])
            m = mib_per_s(np.array([p[1]["bw_mean_MBps"] for p in pts]))
            q25 = mib_per_s(np.array([p[1].get("bw_q25_MBps", p[1]["bw_mean_MBps"]) for p in pts]))
            q75 = mib_per_s(np.array([p[1].get("bw_q75_MBps", p[1]["bw_mean_MBps"]) for p in pts]))
            ax.errorbar(xs, m, yerr=[np.maximum(m - q25, 0), np.maximum(q75 - m, 0)], fmt=marker, color=color,
                        mfc="white", ms=6, capsize=3, label=f"measured {mode}: {what} (mean, quartiles)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("total buffer size (MiB)")
    ax.set_ylabel("effective bandwidth (MiB/s)")
    p = doc["parameters"]
    ax.set_title(f"{p['threads']} threads, T = {p['compute_us'] / 1000:g} ms, v = {p['variability']:g} "
                 f"(sigma = {p['sigma_us']:.4g} us), T_wait = {p['t_wait_us']:g} us", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    if legend:
        ax.legend(fontsize=7)


def plot(docs: list[dict[str, Any]], path: str, title: str | None = None) -> None:
    """Effective bandwidth vs buffer size, one panel per thread count: the model (Algorithm 1), the
    Monte-Carlo model, the single-send and send-when-all-ready models, the ping-pong bandwidth,
    and the measurements (mean ± sd over repetitions) if given."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    n = len(docs)
    fig = Figure(figsize=(9 if n == 1 else 5.2 * n, 5.4 if n == 1 else 6.0), dpi=150)
    axes = fig.subplots(1, n, sharey=True, squeeze=False)[0]
    for i, (ax, doc) in enumerate(zip(axes, docs)):
        _draw(ax, doc, legend=(n == 1))
        if i:
            ax.set_ylabel("")
    if n > 1:
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7)
    fig.suptitle(title or "Partitioned send: effective bandwidth = size / (t_finish - t_last_thread)", fontsize=11)
    fig.tight_layout(rect=(0, 0.12 if n > 1 else 0, 1, 1))
    fig.savefig(path)


def analyze(table: PingPongTable, sizes: np.ndarray, threads: int, compute_us: float, variability: float,
            sigma_rule: str = "thesis", t_wait_us: float = 10.0, mc_samples: int = 2000, seed: int = 0,
            measured: dict[tuple[str, int, int], dict[str, Any]] | None = None,
            message_time: str = "thesis") -> dict[str, Any]:
    """The model at one thread count (one entry of the `models` list of `mpilens model
    partitioned`), compared with the measurements of that thread count."""
    sigma = sigma_of(compute_us, variability, sigma_rule)
    a = algorithm1(table, sizes, threads, compute_us, sigma, t_wait_us, message_time)
    mc = monte_carlo(table, sizes, threads, compute_us, sigma, t_wait_us, mc_samples,
                     np.random.default_rng(seed), message_time) if mc_samples else None
    rows = []
    for i, s in enumerate(sizes):
        r: dict[str, Any] = {"size_bytes": float(s), "message_bytes": float(a["message_bytes"][i]),
                             "t_message_us": float(a["t_message_us"][i]),
                             "overlap_messages": float(a["overlap_messages"][i]), "t_extra_us": float(a["t_extra_us"][i]),
                             "bw_partitioned_MBps": float(a["bw_partitioned"][i]),
                             "t_single_us": float(a["t_single_us"][i]), "bw_single_MBps": float(a["bw_single"][i]),
                             "bw_aggregate_MBps": float(a["bw_aggregate"][i]),
                             "pingpong_bw_MBps": float(table.bandwidth(s)),
                             "bw_monte_carlo_MBps": float(mc["bw_monte_carlo"][i]) if mc else None}
        if measured:
            r["measured"] = {mode: v for (mode, t, size), v in measured.items() if size == int(s) and t == threads}
        rows.append(r)
    doc: dict[str, Any] = {
        "parameters": {"threads": threads, "compute_us": compute_us, "variability": variability,
                       "sigma_rule": sigma_rule, "sigma_us": sigma, "t_wait_us": t_wait_us,
                       "t_last_us": float(a["t_last_us"]), "spread_us": float(a["spread_us"]),
                       "table": table.source, "message_time": message_time, "monte_carlo_samples": mc_samples,
                       "seed": seed},
        "sizes": rows,
        "summary": {"partitioned": curve_summary(sizes, a["bw_partitioned"], a["bw_single"]),
                    "single_send_peak_MBps": float(a["bw_single"].max())},
    }
    if mc:
        doc["summary"]["monte_carlo"] = curve_summary(sizes, mc["bw_monte_carlo"], a["bw_single"])
    if measured:
        cmp = []
        for r in rows:
            for mode, v in r.get("measured", {}).items():
                model = r["bw_partitioned_MBps"] if mode in ("partitioned", "pcl") else r["bw_single_MBps"]
                entry = {"mode": mode, "size_bytes": r["size_bytes"], "measured_MBps": v["bw_mean_MBps"],
                         "measured_sd_MBps": v["bw_sd_MBps"], "reps": v["reps"], "model_MBps": model,
                         "model_over_measured": model / v["bw_mean_MBps"] if v["bw_mean_MBps"] > 0 else None}
                if mode in ("partitioned", "pcl"):
                    entry["monte_carlo_MBps"] = r["bw_monte_carlo_MBps"]
                    entry["aggregate_MBps"] = r["bw_aggregate_MBps"]
                cmp.append(entry)
        doc["comparison"] = cmp
        agg = {}
        for mode in sorted({c["mode"] for c in cmp}):
            r = np.array([c["model_over_measured"] for c in cmp if c["mode"] == mode and c["model_over_measured"]])
            if len(r):
                agg[mode] = {"sizes": int(len(r)), "geometric_mean_model_over_measured": float(np.exp(np.log(r).mean())),
                             "within_factor_1_5": float(np.mean((r >= 1 / 1.5) & (r <= 1.5))),
                             "within_factor_2": float(np.mean((r >= 0.5) & (r <= 2)))}
                ra = np.array([c["aggregate_MBps"] / c["measured_MBps"] for c in cmp
                               if c["mode"] == mode and "aggregate_MBps" in c and c["measured_MBps"] > 0])
                if len(ra):
                    agg[mode]["geometric_mean_all_ready_over_measured"] = float(np.exp(np.log(ra).mean()))
        doc["summary"]["comparison"] = agg
    return doc


def render_text(top: dict[str, Any]) -> str:
    """The human-readable form of a `mpilens model partitioned` document."""
    out = [f"mpilens model partitioned: {top['method']}", ""]
    for doc in top["models"]:
        p = doc["parameters"]
        out += [f"{p['threads']} threads, T_compute {p['compute_us']:g} us, variability {p['variability']:g} -> sigma "
                f"{p['sigma_us']:.4g} us ({p['sigma_rule']} rule), T_wait {p['t_wait_us']:g} us, message time "
                f"{p['message_time']}",
                f"  EMMA slowest thread {p['t_last_us']:.6g} us, fastest-to-slowest spread {p['spread_us']:.5g} us; "
                f"ping-pong table {p['table']}",
                "  bandwidths in MB/s (10^6 B/s): Algorithm 1 | Monte Carlo (gap-aware) | single-send | "
                "send-when-all-ready",
                f"  {'buffer':>11} {'message':>11} {'T_msg us':>10} {'overlap':>8} {'T_extra us':>11} {'Alg.1':>10} "
                f"{'MC':>10} {'single':>10} {'all-ready':>10}"]
        for r in doc["sizes"]:
            mc = "-" if r["bw_monte_carlo_MBps"] is None else f"{r['bw_monte_carlo_MBps']:.0f}"
            out.append(f"  {units.size(r['size_bytes']):>11} {units.size(r['message_bytes']):>11} "
                       f"{r['t_message_us']:>10.4g} {r['overlap_messages']:>8.3g} {r['t_extra_us']:>11.5g} "
                       f"{r['bw_partitioned_MBps']:>10.0f} {mc:>10} {r['bw_single_MBps']:>10.0f} "
                       f"{r['bw_aggregate_MBps']:>10.0f}")
        s = doc["summary"]["partitioned"]
        reg = s["over_single_send_bytes"]
        out.append(f"  Algorithm 1 peak: {s['peak_MBps']:.0f} MB/s = {s['peak_MiBps']:.0f} MiB/s at "
                   f"{units.size(s['peak_size_bytes'])}; above single-send "
                   + (f"from {units.size(reg[0])} to {units.size(reg[1])}" if reg else "nowhere"))
        if "monte_carlo" in doc["summary"]:
            m = doc["summary"]["monte_carlo"]
            out.append(f"  Monte-Carlo peak: {m['peak_MBps']:.0f} MB/s at {units.size(m['peak_size_bytes'])}")
        if doc.get("comparison"):
            out.append("  Measured (mean over repetitions) vs model (partitioned and pcl against Algorithm 1, single "
                       "against the single-send model):")
            for c in doc["comparison"]:
                extra = ""
                if "monte_carlo_MBps" in c:
                    extra = f", Monte Carlo {c['monte_carlo_MBps']:.0f}, send-when-all-ready {c['aggregate_MBps']:.0f}"
                ratio = "-" if c["model_over_measured"] is None else f"{c['model_over_measured']:.2f}"
                out.append(f"    {c['mode']:<12} {units.size(c['size_bytes']):>10}: measured {c['measured_MBps']:.0f} ± "
                           f"{c['measured_sd_MBps']:.0f} MB/s ({c['reps']} reps), model {c['model_MBps']:.0f} "
                           f"(model/measured {ratio}){extra}")
            for mode, g in doc["summary"].get("comparison", {}).items():
                out.append(f"  {mode}: model/measured geometric mean {g['geometric_mean_model_over_measured']:.2f} over "
                           f"{g['sizes']} sizes; within x1.5 at {g['within_factor_1_5']:.0%}, within x2 at "
                           f"{g['within_factor_2']:.0%} of them"
                           + (f"; send-when-all-ready model/measured {g['geometric_mean_all_ready_over_measured']:.2f}"
                              if "geometric_mean_all_ready_over_measured" in g else ""))
        out.append("")
    return "\n".join(out)
