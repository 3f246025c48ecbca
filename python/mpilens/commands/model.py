"""`mpilens model variability` (runtime predictions at larger scales from interval maxima) and
`mpilens model partitioned` (effective bandwidth of partitioned sends, Algorithm 1)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..cli import command
from ..errors import MpilensError


def _ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated rank counts, got {text!r}") from err
    if not out or any(v < 1 for v in out):
        raise argparse.ArgumentTypeError(f"expected positive rank counts, got {text!r}")
    return out


VAR_METHODS = ("non-parametric", "inter-node", "intra-node", "hybrid")


def _setup(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="model", required=True, metavar="MODEL")
    v = sub.add_parser("variability", help="predict the runtime at larger scales (GEV, EMMA, bootstrap)",
                       description="Fit GEV distributions (PWM, MOM, MLE) to the per-interval maxima of calibration "
                                   "runs at one scale and predict the runtime of one run at larger scales with "
                                   "non-parametric, inter-node and intra-node parametric, and hybrid bootstraps "
                                   "(median and 95 %% interval). Calibration data: run directories recorded with "
                                   "--set MPILENS_INTERVALS=1, or BSP harness logs (examples/c/bsp_harness -o).")
    v.add_argument("runs", nargs="+", type=Path, metavar="RUNDIR", help="calibration runs, all at the same rank count")
    v.add_argument("--predict", type=_ints, default=[], metavar="P1,P2,...",
                   help="rank counts to predict (measured scales are added)")
    v.add_argument("--measured", nargs="+", type=Path, default=[], metavar="RUNDIR",
                   help="runs at the target scales: the accuracy score and the plot compare against them")
    v.add_argument("--replicas", type=int, default=1000, help="bootstrap replicas per method (default 1000)")
    v.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    v.add_argument("--skip", type=int, default=None,
                   help="leading intervals to drop (default 1 for run directories: MPI_Init to the first collective "
                        "is setup; 0 for harness logs)")
    v.add_argument("--intervals", type=int, default=None, help="predict runs of this many intervals (default: as "
                                                                  "calibrated)")
    v.add_argument("--scheme", choices=["thesis", "pooled"], default="thesis",
                   help="parametric replicas: thesis = each resamples one node (rank slot); pooled = each resamples "
                        "the units and fits them together (cluster bootstrap, calibrated coverage)")
    v.add_argument("--tail", type=float, default=0.1, help="hybrid: fraction of the largest maxima given the GEV tail")
    v.add_argument("--methods", default=",".join(VAR_METHODS),
                   help=f"comma separated subset of {', '.join(VAR_METHODS)}")
    v.add_argument("--plot", type=Path, metavar="FILE.png", help="write predicted vs measured runtimes as a PNG")
    v.add_argument("--title", help="plot title")
    v.add_argument("--json", action="store_true", help="print one JSON document")
    v.add_argument("--quiet", action="store_true", help="no progress display")

    q = sub.add_parser("partitioned", help="effective bandwidth of partitioned sends (Algorithm 1)",
                       description="Model the effective bandwidth size / (t_finish - t_last_thread) of a partitioned "
                                   "send of N threads with normally distributed compute times (thesis Algorithm 1), "
                                   "a gap-aware Monte-Carlo variant and the single-send baseline, from a ping-pong "
                                   "table (mpilens bench pingpong, or OSU tables).")
    src = q.add_mutually_exclusive_group(required=True)
    src.add_argument("--pingpong", type=Path, metavar="TABLE.csv",
                     help="latency/bandwidth table: size_bytes, [SYSTEM_]latency_us, [SYSTEM_]bandwidth_MBps")
    src.add_argument("--postal", metavar="ALPHA_US,BETA_MBPS", help="constant Postal model instead of a table")
    q.add_argument("--system", help="column prefix in a table of several systems (e.g. lassen, quartz)")
    q.add_argument("--threads", type=_ints, required=True, metavar="N[,N...]",
                   help="threads (= partitions); several give one model (and plot panel) each")
    q.add_argument("--compute-ms", type=float, required=True, help="mean compute time of a thread (ms)")
    q.add_argument("--variability", type=float, required=True,
                   help="runtime variability v: sigma = T v^2 (thesis) or T v (--sigma-rule plain)")
    q.add_argument("--sigma-rule", choices=["thesis", "plain"], default="thesis")
    q.add_argument("--message-time", choices=["thesis", "latency"], default="thesis",
                   help="time of an M-byte message: thesis = table latency(M) + M / bandwidth(M) (as the thesis; "
                        "counts the transfer twice for large M), latency = the table's one-way time latency(M)")
    q.add_argument("--t-wait-us", type=float, default=10.0, help="completion-call overhead T_wait (us, default 10)")
    q.add_argument("--sizes", help="buffer sizes: 64KiB,1MiB or 1MiB..1GiB (powers of two); default 9 x 2^k MiB, "
                                   "0.28 MiB .. 4.5 GiB (the thesis' grid)")
    q.add_argument("--measured", type=Path, metavar="BENCH.csv", help="partitioned_bench output to compare against")
    q.add_argument("--monte-carlo", type=int, default=2000, metavar="SAMPLES",
                   help="samples of the gap-aware Monte-Carlo model (0: off; default 2000)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--plot", type=Path, metavar="FILE.png", help="write the bandwidth curves as a PNG")
    q.add_argument("--title", help="plot title")
    q.add_argument("--json", action="store_true", help="print one JSON document")


@command("model", "statistical performance models: variability (GEV/EMMA/bootstrap), partitioned sends", _setup)
def cmd_model(a: argparse.Namespace) -> int:
    """`mpilens model variability|partitioned`: fit and print a statistical performance model."""
    if a.model == "variability":
        return _variability(a)
    return _partitioned(a)


def _json_default(o: object) -> object:
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def _clean(x: object) -> object:
    """JSON has no NaN/Infinity: they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _variability(a: argparse.Namespace) -> int:
    from ..model import data, variability
    from ..progress import Steps

    methods = tuple(m.strip() for m in a.methods.split(",") if m.strip())
    bad = [m for m in methods if m not in VAR_METHODS]
    if bad or not methods:
        raise MpilensError(f"--methods: unknown {', '.join(bad) or '(none)'}; choose from {', '.join(VAR_METHODS)}")
    if a.replicas < 20:
        raise MpilensError("--replicas must be at least 20 (1000 or more for 95 % intervals, Efron)")
    if a.skip is not None and a.skip < 0:
        raise MpilensError("--skip must be >= 0")
    if not 0 < a.tail < 1:
        raise MpilensError("--tail must be between 0 and 1")
    with Steps(len(a.runs) + len(a.measured) + 2, quiet=a.quiet or a.json) as step:
        calib = []
        for r in a.runs:
            step(f"reading {r}")
            calib.append(data.load(r, a.skip))
        measured = []
        for r in a.measured:
            step(f"reading {r}")
            measured.append(data.load(r, a.skip))
        step("fits and bootstrap predictions")
        opts = variability.Options(targets=a.predict, replicas=a.replicas, seed=a.seed, intervals=a.intervals,
                                   tail=a.tail, methods=methods, scheme=a.scheme)
        if not a.predict and not measured:
            raise MpilensError("nothing to predict: give --predict P1,P2,... or --measured RUNDIR...")
        result = variability.analyze(calib, measured, opts)
        step("writing")
        if a.plot:
            try:
                variability.plot(result, str(a.plot), a.title)
            except OSError as err:
                raise MpilensError(f"cannot write {a.plot}: {err.strerror}") from err
            result.doc["plot"] = str(a.plot)
    if a.json:
        json.dump(_clean(result.doc), sys.stdout, indent=1, default=_json_default)
        print()
    else:
        sys.stdout.write(variability.render_text(result.doc))
        if a.plot:
            print(f"Plot: {a.plot}")
    return 0


def _partitioned(a: argparse.Namespace) -> int:
    import numpy as np

    from ..model import partitioned as pm

    if a.compute_ms <= 0 or a.variability < 0 or a.t_wait_us < 0:
        raise MpilensError("--compute-ms must be positive, --variability and --t-wait-us not negative")
    if a.monte_carlo < 0:
        raise MpilensError("--monte-carlo must be >= 0")
    if a.pingpong:
        table = pm.load_table(a.pingpong, a.system)
    else:
        try:
            alpha, beta = (float(x) for x in a.postal.split(","))
        except ValueError as err:
            raise MpilensError(f"--postal {a.postal!r}: expected ALPHA_US,BETA_MBPS") from err
        table = pm.constant_table(alpha, beta)
    sizes = pm.parse_sizes(a.sizes)
    measured = pm.load_measurements(a.measured) if a.measured else None
    if measured and not any(t in a.threads for (_, t, _) in measured):
        have = sorted({t for (_, t, _) in measured})
        raise MpilensError(f"{a.measured} holds measurements with {have} threads, none with --threads {a.threads}")

    def sizes_for(threads: int) -> np.ndarray:
        """--sizes, or the sizes measured with this thread count and the powers of two between them."""
        if a.sizes or not measured:
            return sizes
        got = sorted({float(size) for (_, t, size) in measured if t == threads}) or \
            sorted({float(size) for (_, _, size) in measured})
        grid = 2.0 ** np.arange(np.ceil(np.log2(got[0])), np.floor(np.log2(got[-1])) + 1)
        near = lambda v: any(abs(v - g) <= 0.001 * g for g in got)  # noqa: E731 - a size rounded to N partitions
        return np.array(sorted(set(got) | {g for g in grid.tolist() if not near(g)}))

    models = [pm.analyze(table, sizes_for(t), t, a.compute_ms * 1000.0, a.variability, a.sigma_rule, a.t_wait_us,
                         a.monte_carlo, a.seed, measured, a.message_time) for t in a.threads]
    doc = {"schema": "mpilens.model.partitioned/1", "method": pm.METHOD, "units": pm.UNITS, "models": models}
    if a.plot:
        try:
            pm.plot(models, str(a.plot), a.title)
        except OSError as err:
            raise MpilensError(f"cannot write {a.plot}: {err.strerror}") from err
        doc["plot"] = str(a.plot)
    if a.json:
        json.dump(_clean(doc), sys.stdout, indent=1)
        print()
    else:
        sys.stdout.write(pm.render_text(doc))
        if a.plot:
            print(f"Plot: {a.plot}")
    return 0
