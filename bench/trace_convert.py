#!/usr/bin/env python3
"""Conversion throughput of trace mode's analysis side, on a real trace.

Records a trace of bench/msgrate.c (8-byte nonblocking messages, two ranks: the densest event
stream an MPI program makes) with `mpilens run --mode trace`, long enough for about --events
events, then times each step of the Python side separately, in a fresh process per step so that
one step's caches do not help the next:

  load      read every rank's file into one time-sorted table (numpy, rank by rank)
  match     pair every send with its receive (communicator, source, destination, tag, order)
  findings  late sender / late receiver / collective waits / irregular durations / gaps
  parquet   `mpilens trace --format parquet` (load + match + write, the command as users run it)
  chrome    `mpilens trace --format chrome` (text JSON, per event)
  otf2      `mpilens export otf2` (an OTF2 archive through the otf2 Python writer, record by record)

Usage: .venv/bin/python bench/trace_convert.py [--events 10000000] [--mpi openmpi] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import ROOT, BenchError, base_env, compile_program, launcher, trace_size  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
MPILENS = str(ROOT / ".venv" / "bin" / "mpilens")
# events of one msgrate batch at scale 1 (both ranks), measured: the run's size is scaled from it
EVENTS_PER_BATCH = 135_000

STEP = {
    "load": "tl = timeline.load(rundir); n = len(tl.ev)",
    "match": "tl = timeline.load(rundir); t = time.perf_counter(); m = tl.messages; n = len(tl.ev)",
    "findings": "tl = timeline.load(rundir); tl.messages; tl.collectives; t = time.perf_counter(); "
                "f = findings.find(tl); n = len(tl.ev)",
}


def timed_step(step: str, rundir: Path) -> float:
    """Seconds of one analysis step in a fresh interpreter (the step's own part only)."""
    code = ("import sys, time\nfrom mpilens.trace import timeline, findings\n"
            f"rundir = {str(rundir)!r}\nt = time.perf_counter()\n{STEP[step]}\n"
            "print(time.perf_counter() - t, n)")
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"step {step} failed:\n{r.stderr}")
    return float(r.stdout.split()[0])


def timed_command(argv: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"{' '.join(argv)} failed:\n{r.stderr}")
    return time.perf_counter() - t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=float, default=1e7, help="events to record, about (default 1e7)")
    p.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    p.add_argument("--keep", type=Path, help="write the run and the exports here and keep them")
    p.add_argument("--json", type=Path, help="also write the numbers here")
    a = p.parse_args()
    try:
        exe = compile_program(a.mpi, "msgrate")
        work = a.keep or Path(tempfile.mkdtemp(prefix="mpilens-trace-bench-"))
        work.mkdir(parents=True, exist_ok=True)
        rundir = work / "run"
        shutil.rmtree(rundir, ignore_errors=True)
        batches = max(1, round(a.events / EVENTS_PER_BATCH))
        cmd = [MPILENS, "run", "--mode", "trace", "-o", str(rundir), "--",
               *launcher(a.mpi, "core"), str(exe), str(batches)]
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=base_env())
        run_s = time.perf_counter() - t
        if r.returncode != 0:
            raise BenchError(f"the traced run failed:\n{r.stderr}")
        size, events, _, _ = trace_size(rundir)
        res: dict[str, float] = {"run_s": run_s, "bytes": size}
        for step in STEP:
            res[f"{step}_s"] = timed_step(step, rundir)
            print(f"  {step}: {res[f'{step}_s']:.2f} s", file=sys.stderr)
        res["events"] = events
        for fmt, out in (("parquet", work / "t.parquet"), ("chrome", work / "t.json"), ("otf2", work / "t-otf2")):
            shutil.rmtree(out, ignore_errors=True)  # otf2 writes a new directory
            res[f"{fmt}_s"] = timed_command([MPILENS, "export", fmt, str(rundir), "-o", str(out), "--quiet"])
            res[f"{fmt}_bytes"] = (sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) if out.is_dir()
                                   else out.stat().st_size)
            print(f"  {fmt}: {res[f'{fmt}_s']:.2f} s", file=sys.stderr)
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    except (BenchError, subprocess.CalledProcessError) as err:
        print(f"trace_convert: {err}", file=sys.stderr)
        return 1

    m = events / 1e6
    print(f"### Trace conversion ({a.mpi}, bench/msgrate.c {batches} batches, 2 ranks): "
          f"{events:,} events, {size / 2**20:.0f} MiB ({size / events:.1f} B/event), recorded in {run_s:.1f} s\n")
    print("| step | seconds | M events/s |\n|---|---:|---:|")
    for step in ("load", "match", "findings", "parquet", "chrome", "otf2"):
        s = res[f"{step}_s"]
        print(f"| {step} | {s:.1f} | {m / s:.2f} |")
    print(f"\nParquet file {res['parquet_bytes'] / 2**20:.0f} MiB, Chrome JSON {res['chrome_bytes'] / 2**20:.0f} MiB "
          f"({res['chrome_s'] / events * 1e6:.2f} µs per event), OTF2 archive {res['otf2_bytes'] / 2**20:.0f} MiB "
          f"({res['otf2_s'] / events * 1e6:.2f} µs per event).")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
