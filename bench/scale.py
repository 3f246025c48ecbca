#!/usr/bin/env python3
"""Cost of the in-job aggregation as the job grows, under `mpilens run`, for each MPI, at
2, 4, 8, 16, 32 and 64 ranks (oversubscribed as needed), several runs each, with one of two
programs:
  --program ring  examples/c/ring.c: each rank sends to one neighbour, P matrix entries, the same
                  payload per rank at every scale (what the aggregation itself costs)
  --program a2a   examples/c/a2a.c: every rank exchanges with every other, P*(P-1) entries (the
                  worst case: the profile grows with the number of communicating pairs)

Per MPI and rank count it prints, as a markdown table:
  - the median of profile.json "tool_cost.finalize_gather_s" (time of the tree reduction in
    MPI_Finalize) and its range over the runs,
  - the size of profile.json in bytes,
  - "tool_cost.payload_bytes" (size of the aggregated payload),
  - the number of matrix entries (checked against P*(P-1)).

Usage: .venv/bin/python bench/scale.py [--program ring|a2a] [--reps N] [--ranks 2,4,...] [--mpi openmpi,mpich]
Needs the examples built (`make`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MPILENS = ROOT / ".venv" / "bin" / "mpilens"


def job_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPILENS_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none",
               HYDRA_LAUNCHER="fork")
    return env


def launcher(mpi: str, np: int) -> list[str]:
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--oversubscribe", "--bind-to", "none", "-np", str(np)]
    return ["mpirun.mpich", "-np", str(np)]


PROGRAMS = {  # name: (arguments, line the program prints when it checked its data, matrix entries)
    "a2a": ([], lambda np: f"a2a: ok {np}", lambda np: np * (np - 1)),
    "ring": (["10", "1024"], lambda np: "ring: 10 messages of 1024 bytes", lambda np: np),
}


def one_run(program: str, mpi: str, np: int, workdir: Path, i: int) -> dict:
    exe = ROOT / "build" / mpi / "examples" / program
    if not exe.exists():
        sys.exit(f"{exe} is not built: make build/{mpi}/examples/{program}")
    args, ok_line, entries = PROGRAMS[program]
    out = workdir / f"{mpi}-{np}-{i}"
    cmd = [str(MPILENS), "run", "-o", str(out), "--mpi", mpi, "--", *launcher(mpi, np), str(exe), *args]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=job_env(), capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - t0
    if p.returncode != 0 or ok_line(np) not in p.stdout:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    path = out / "profile.json"
    prof = json.loads(path.read_text())
    if len(prof["matrix"]) != entries(np):
        sys.exit(f"{mpi} {np} ranks: {len(prof['matrix'])} matrix entries, expected {entries(np)}")
    return {"gather_s": prof["tool_cost"]["finalize_gather_s"], "size": path.stat().st_size,
            "payload": prof["tool_cost"]["payload_bytes"], "entries": len(prof["matrix"]), "job_s": elapsed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--program", choices=sorted(PROGRAMS), default="ring")
    ap.add_argument("--reps", type=int, default=5, help="runs per MPI and rank count (default 5)")
    ap.add_argument("--ranks", default="2,4,8,16,32,64", help="comma separated rank counts")
    ap.add_argument("--mpi", default="openmpi,mpich", help="comma separated MPIs")
    args = ap.parse_args()
    ranks = [int(x) for x in args.ranks.split(",")]
    mpis = args.mpi.split(",")

    rows = []
    with tempfile.TemporaryDirectory(prefix="mpilens-scale-") as tmp:
        for mpi in mpis:
            for np in ranks:
                runs = [one_run(args.program, mpi, np, Path(tmp), i) for i in range(args.reps)]
                g = [r["gather_s"] for r in runs]
                rows.append((mpi, np, statistics.median(g), min(g), max(g), statistics.median(r["size"] for r in runs),
                             statistics.median(r["payload"] for r in runs), runs[0]["entries"],
                             statistics.median(r["job_s"] for r in runs)))
                print(f"{mpi} {np} ranks done", file=sys.stderr)

    cores = os.cpu_count()
    print(f"{args.program} under `mpilens run`, {args.reps} runs per row, {cores} cores (oversubscribed above {cores} ranks)\n")
    print("| MPI | ranks | finalize gather median (ms) | min-max (ms) | profile.json (bytes) | payload (bytes) "
          "| matrix entries | job wall median (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mpi, np, med, lo, hi, size, payload, entries, job in rows:
        print(f"| {mpi} | {np} | {med * 1e3:.2f} | {lo * 1e3:.2f}-{hi * 1e3:.2f} | {size:.0f} | {payload:.0f} "
              f"| {entries} | {job:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
