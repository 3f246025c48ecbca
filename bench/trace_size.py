#!/usr/bin/env python3
"""The trace's size from a profile: the calibration of mpilens.trace.estimate, and its check on
real applications.

Runs programs under `--mode trace` (the profile comes with every trace), and for each rank takes
the profile's counts (the estimate's inputs: calls, nonblocking operations, region visits) and the
trace file's real bytes and writer CPU. Fits the estimate's bytes per call, per operation, per
region visit and per rank (non-negative least squares) on the examples only, then gives the
estimate's error on what the fit never saw: Debian's LAMMPS (in.indent) and NetPIPE (a fixed number
of repeats, so that every run makes the same calls). For those two, also the estimate calibrated on
a trace of the run's first tenth only (MPILENS_TRACE_WINDOW; `mpilens trace --estimate` of that
run), against the whole trace. Also the bytes per event of the exports (chrome, parquet, otf2,
perfetto when registered) and the writer's CPU per event.

Usage: .venv/bin/python bench/trace_size.py [--mpi openmpi] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from mpilens.trace import estimate  # noqa: E402

MPILENS = str(ROOT / ".venv" / "bin" / "mpilens")
ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1",
       "HYDRA_LAUNCHER": "fork"}


def launcher(mpi: str, np_: int) -> list[str]:
    return (["mpirun.openmpi", "--oversubscribe", "--bind-to", "none", "-np", str(np_)] if mpi == "openmpi"
            else ["mpirun.mpich", "-np", str(np_)])


def examples(mpi: str) -> list[tuple[str, int, list[str]]]:
    ex = ROOT / "build" / mpi / "examples"
    return [
        ("ring", 4, [str(ex / "ring"), "3000", "64"]),
        ("ring-long", 2, [str(ex / "ring"), "20000", "8"]),
        ("stencil", 4, [str(ex / "stencil"), "64", "400"]),
        ("exchange-alltoall", 2, [str(ex / "exchange"), "alltoall", "200", "10", "64"]),
        ("exchange-pairwise", 2, [str(ex / "exchange"), "pairwise", "50", "10", "64"]),
        ("traffic_coll", 4, [str(ex / "traffic_coll"), "1000", "0"]),
        ("halo3d", 8, [str(ex / "halo3d")]),
        ("a2a", 8, [str(ex / "a2a")]),
    ]


def held_out(mpi: str, work: Path) -> list[tuple[str, int, list[str]]]:
    out = []
    lmp = shutil.which("lmp")
    indent = Path("/usr/share/lammps/examples/indent")
    if lmp and (indent / "in.indent").exists():
        shutil.copytree(indent, work / "indent")
        text = (work / "indent" / "in.indent").read_text().replace("run\t\t30000", "run\t\t4000")
        (work / "indent" / "in.indent").write_text(text)
        out.append(("lammps-indent", 4, [lmp, "-in", str(work / "indent" / "in.indent"), "-log", "none"]))
    np_exe = shutil.which({"openmpi": "NPopenmpi", "mpich": "NPmpich2"}[mpi])
    if np_exe:
        out.append(("netpipe", 2, [np_exe, "-u", "8192", "-n", "5000", "-o", str(work / "np.out")]))
    return out


def traced(mpi: str, name: str, np_: int, argv: list[str], work: Path, window: str | None = None) -> Path:
    run = work / name
    import os
    extra = ["--set", f"MPILENS_TRACE_WINDOW={window}"] if window else []
    subprocess.run([MPILENS, "run", "--mode", "trace", "-o", str(run), *extra, "--", *launcher(mpi, np_), *argv],
                   env={**os.environ, **ENV}, cwd=work, check=True, capture_output=True, timeout=600)
    return run


def calibrated(mpi: str, name: str, np_: int, argv: list[str], work: Path, whole: Path) -> tuple[float, float]:
    """The estimate of `mpilens trace --estimate` on a run traced for the first tenth of the whole
    run's time, and the share of the whole trace that window wrote."""
    wall = json.loads((whole / "profile.json").read_text())["wall_time_s"]
    run = traced(mpi, name + "-window", np_, argv, work, f"0:{wall / 10:.3g}")
    est = json.loads(subprocess.run([MPILENS, "trace", str(run), "--estimate", "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    size = lambda d: sum(f.stat().st_size for f in (d / "trace").glob("rank-*.bin"))  # noqa: E731
    return est["bytes"], size(run) / size(whole)


def measure(run: Path) -> dict:
    """Per rank: the estimate's features from the profile, the real trace bytes, the writer's CPU."""
    import mpilens
    from mpilens.trace import reader

    r = mpilens.load(run)
    feats = estimate.features(r.profile)
    files = sorted((run / "trace").glob("rank-*.bin"))
    real = [f.stat().st_size for f in files]
    cpu, events = [], []
    for f in reader.trace_files(run):
        t = reader.read_rank(f)
        cpu.append(t.writer_cpu_s or 0.0)
        events.append(len(t.events))
    return {"features": feats.tolist(), "bytes": real, "writer_cpu_s": cpu, "events": events}


def exports(run: Path, work: Path) -> dict[str, int]:
    """Bytes of each trace export of the run."""
    import os
    sizes = {}
    for fmt in ("chrome", "parquet", "otf2", "perfetto"):
        out = work / f"{run.name}.{fmt}"
        try:
            p = subprocess.run([MPILENS, "export", fmt, str(run), "-o", str(out)], capture_output=True, text=True,
                               env={**os.environ, **ENV}, timeout=300)
        except subprocess.TimeoutExpired:
            continue
        if p.returncode != 0:
            continue
        sizes[fmt] = (sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) if out.is_dir()
                      else out.stat().st_size)
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each row as it is measured
    with tempfile.TemporaryDirectory(prefix="mpilens-trace-size-") as tmp:
        work = Path(tmp)
        fit_runs = {n: measure(traced(a.mpi, n, k, argv, work)) for n, k, argv in examples(a.mpi)}
        X = np.array([f for m in fit_runs.values() for f in m["features"]], dtype=float)
        y = np.array([b for m in fit_runs.values() for b in m["bytes"]], dtype=float)
        coef, _ = nnls(X, y)
        print("fit (bytes per " + ", ".join(estimate.FEATURES) + "): " + ", ".join(f"{c:.2f}" for c in coef))
        result = {"mpi": a.mpi, "coefficients": dict(zip(estimate.FEATURES, coef.tolist())), "runs": {}}
        apps = held_out(a.mpi, work)
        checks = {n: traced(a.mpi, n, k, argv, work) for n, k, argv in apps}
        windows = {n: calibrated(a.mpi, n, k, argv, work, checks[n]) for n, k, argv in apps}
        print(f"{'run':20} {'ranks':>5} {'real MiB':>9} {'estimate':>9} {'error':>7} {'with the code':>13}  "
              "writer ns/event  export bytes/event  calibrated on a window")
        for name, m in [*fit_runs.items(), *((n, measure(r)) for n, r in checks.items())]:
            real = sum(m["bytes"])
            fitted = float((np.array(m["features"]) @ coef).sum())
            coded = sum(estimate.trace_bytes(np.array(f)) for f in m["features"])
            events = sum(m["events"])
            ns = 1e9 * sum(m["writer_cpu_s"]) / max(events, 1)
            ex = exports(checks[name], work) if name == "lammps-indent" else {}  # NetPIPE's: minutes
            per = " ".join(f"{k} {v / max(events, 1):.0f}" for k, v in ex.items())
            tag = "" if name in fit_runs else " (held out)"
            win = ""
            if name in windows:
                b, share = windows[name]
                win = f"  {(b - real) / real:+.1%} (the window wrote {share:.0%} of the trace)"
            print(f"{name + tag:20} {len(m['bytes']):>5} {real / 2**20:>9.2f} {fitted / 2**20:>9.2f} "
                  f"{(fitted - real) / real:>+7.1%} {(coded - real) / real:>+13.1%}  {ns:>15.0f}  {per}{win}")
            result["runs"][name] = {**m, "exports": ex, "fitted_error": (fitted - real) / real,
                                    "code_error": (coded - real) / real,
                                    "window_error": (windows[name][0] - real) / real if name in windows else None}
        if a.json:
            a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
