#!/usr/bin/env python3
"""The runtime's cost on a real application: Debian's LAMMPS, its indent example (420 atoms, two runs
of 30,000 steps), on two ranks bound to cores. Each step exchanges a few small messages with the
neighbour (MPI_Irecv, MPI_Send, MPI_Wait), so the run is bound by the per-message path the
micro-benchmarks measure.

Each round runs plain LAMMPS and LAMMPS under each --set of mpilens (profile mode, or the mode a
--set names: --set MPILENS_MODE=trace) in a fresh random order; the time is LAMMPS' own "Loop
time" (the sum of its two runs), not the tool's. The table gives, per setting, the median over
rounds of (with / without) from the same round, and a bootstrap 95 % interval, and the time added
per receive of the busier rank (each step's messages are a receive, a send and a wait on each
rank). Every run with mpilens is checked: its profile
counts the receives LAMMPS posted, each completed by one MPI_Wait, and a traced run must have
written a trace for each rank.

Usage: .venv/bin/python bench/lammps.py [--rounds N] [--set - --set MPILENS_TIME_SAMPLE=64
       --set MPILENS_MODE=trace] [--lib-dir DIR] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import (  # noqa: E402
    ROOT,
    BenchError,
    base_env,
    bootstrap_median_ci,
    launcher,
    log,
    parse_settings,
    sha256,
    tool_env_args,
)

INDENT = Path("/usr/share/lammps/examples/indent")
LOOP_RE = re.compile(r"^Loop time of ([\d.eE+-]+) on (\d+) procs", re.M)


def lammps_mpi(exe: str) -> str:
    """The MPI Debian's lmp links: openmpi or mpich."""
    out = subprocess.run(["ldd", exe], capture_output=True, text=True, check=True).stdout
    if "libmpich" in out:
        return "mpich"
    if "libmpi.so" in out:
        return "openmpi"
    raise BenchError(f"{exe} links no known MPI")


def run(mpi: str, exe: str, work: Path, lib: Path | None, settings: dict[str, str],
        outdir: Path) -> tuple[float, list[int] | None]:
    """One run of in.indent: LAMMPS' loop time of its two runs, in seconds, and with mpilens the
    receives each rank posted. settings: MPILENS_* of a run with mpilens, its MPILENS_MODE among
    them (default profile)."""
    cmd = launcher(mpi, "core")
    settings = dict(settings)
    mode = settings.pop("MPILENS_MODE", "profile")
    if lib is not None:
        cmd += tool_env_args(mpi, lib, outdir, mode, settings)
    cmd += [exe, "-in", "in.indent", "-log", "none"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=base_env(), cwd=work, timeout=300)
    loops = LOOP_RE.findall(r.stdout)
    if r.returncode != 0 or len(loops) != 2:
        raise BenchError(f"failed (exit {r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    if lib is not None:
        try:
            funcs = json.loads((outdir / "profile.json").read_text())["functions"]
        except (OSError, ValueError, KeyError) as e:
            raise BenchError(f"{outdir}: no readable profile: {e}") from None
        irecv, wait = funcs["MPI_Irecv"]["calls"], funcs["MPI_Wait"]["calls"]
        if not all(irecv) or irecv != wait:
            raise BenchError(f"{outdir}: MPI_Irecv {irecv} and MPI_Wait {wait}: LAMMPS completes each receive by a wait")
        if "trace" in mode.split(","):
            traces = [f for f in (outdir / "trace").glob("rank-*.bin") if f.stat().st_size > 0]
            if len(traces) != len(irecv):
                raise BenchError(f"{outdir}: {len(traces)} trace files written for {len(irecv)} ranks")
        shutil.rmtree(outdir)
        return sum(float(t) for t, _ in loops), irecv
    return sum(float(t) for t, _ in loops), None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--set", action="append", dest="sets", help="MPILENS_K=V[,...] or - (default: -)")
    p.add_argument("--lib-dir", type=Path, default=ROOT / "build" / "lib")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    sets = args.sets or ["-"]
    try:
        settings = {s: parse_settings(s) for s in sets}  # a bad --set fails before any run
        exe = shutil.which("lmp")
        if exe is None or not (INDENT / "in.indent").is_file():
            raise BenchError("lmp or its indent example is missing: `make deps` installs lammps and lammps-examples")
        mpi = lammps_mpi(exe)
        with tempfile.TemporaryDirectory(prefix="mpilens-lammps-") as tmp:
            work = Path(tmp) / "indent"
            shutil.copytree(INDENT, work)
            lib = Path(tmp) / f"libmpilens-{mpi}.so"  # a copy: a rebuild cannot change what is measured
            shutil.copy2(args.lib_dir / f"libmpilens-{mpi}.so", lib)
            times: dict[str, list[float]] = {s: [] for s in ["plain", *sets]}
            receives: list[int] = []
            rng = random.Random(20261126)
            for r in range(args.rounds):
                order = list(times)
                rng.shuffle(order)
                for k, s in enumerate(order):
                    outdir = Path(tmp) / f"run-{r}-{k}"
                    t, recv = run(mpi, exe, work, None if s == "plain" else lib,
                                  {} if s == "plain" else settings[s], outdir)
                    times[s].append(t)
                    receives = recv or receives
                log(f"  round {r + 1}/{args.rounds} done")
            digest = sha256(lib)[:12]
    except BenchError as e:
        print(f"lammps.py: {e}", file=sys.stderr)
        return 1
    plain = times["plain"]
    print(f"### LAMMPS in.indent ({mpi}, 2 ranks bound to cores, {args.rounds} rounds): plain loop time "
          f"{statistics.median(plain):.3f} s (rounds {min(plain):.3f}–{max(plain):.3f}); "
          f"MPI_Irecv per rank {receives}\n")
    per_msg = max(receives)
    print("| runtime | settings | loop time, with / without (95 % CI) | added per run | per receive |")
    print("|---|---|---|---:|---:|")
    rows = []
    for s in sets:
        ratios = [w / p_ for w, p_ in zip(times[s], plain)]
        lo, hi = bootstrap_median_ci(ratios)
        added = statistics.median(w - p_ for w, p_ in zip(times[s], plain))
        rows.append({"settings": s, "ratio": statistics.median(ratios), "ci": [lo, hi], "added_s": added})
        print(f"| now ({digest}) | {s} | **{statistics.median(ratios):.3f}** ({lo:.3f}–{hi:.3f}) "
              f"| {added * 1e3:+.0f} ms | {added / per_msg * 1e9:+.0f} ns |")
    if args.json:
        args.json.write_text(json.dumps({"mpi": mpi, "rounds": args.rounds, "receives": receives, "times": times,
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
