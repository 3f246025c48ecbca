"""`mpilens bench pingpong`: an OSU-style latency/bandwidth table of this machine (CSV), the input
of `mpilens model partitioned`. It runs examples/c/partitioned_bench --mode pingpong on 2 ranks
with the chosen MPI's launcher (not under mpilens: it measures the machine, not a program)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from .. import safefile
from ..cli import command
from ..errors import LaunchError, MpilensError


def _setup(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    q = sub.add_parser("pingpong", help="OSU-style latency/bandwidth table of this machine (CSV)",
                       description="Measure latency (half round trip of a blocking ping-pong) and bandwidth (window "
                                   "of 64 non-blocking sends per acknowledgement, as osu_bw) between 2 ranks for "
                                   "sizes 1 B .. --max-size, and write the table as CSV (size_bytes, latency_us, "
                                   "bandwidth_MBps; MB = 10^6 bytes).")
    q.add_argument("-o", "--output", type=Path, help="CSV file to write (default: stdout)")
    q.add_argument("--mpi", choices=["mpich", "openmpi"], default="mpich", help="MPI to measure (default mpich)")
    q.add_argument("--launcher", help="launcher command for 2 ranks (default: mpirun.<mpi> -np 2)")
    q.add_argument("--max-size", default="4MiB", help="largest message (default 4MiB, as the OSU tables)")
    q.add_argument("--iters-scale", type=float, default=1.0, help="scale the iteration counts (default 1)")
    q.add_argument("--repeat", type=int, default=3,
                   help="run the job this many times and keep the median latency and bandwidth per size (default 3; "
                        "robust against other load on the machine)")
    q.add_argument("--timeout", type=float, default=600, help="seconds before each job is stopped")
    q.add_argument("--json", action="store_true", help="print the table as one JSON document")


def _program(mpi: str) -> Path:
    from ..build_info import home

    # the examples are built in a checkout only (its home is build/)
    exe = (home() or Path("build")) / mpi / "examples" / "partitioned_bench"
    if not exe.exists():
        raise LaunchError(f"{exe} is not built: in a checkout of mpilens, make build/{mpi}/examples/partitioned_bench")
    return exe


def _launcher(a: argparse.Namespace) -> list[str]:
    if a.launcher:
        return shlex.split(a.launcher)
    name = f"mpirun.{a.mpi}"
    if shutil.which(name) is None:
        if shutil.which("mpirun") is None:
            raise LaunchError(f"neither {name} nor mpirun found; give --launcher")
        name = "mpirun"
    return [name, "-np", "2"]


@command("bench", "measure the machine: pingpong (latency/bandwidth table for the partitioned model)", _setup)
def cmd_bench(a: argparse.Namespace) -> int:
    """`mpilens bench pingpong`: measure the latency/bandwidth table the partitioned model uses."""
    from ..model.partitioned import parse_size

    max_size = int(parse_size(a.max_size))
    if max_size < 1:
        raise MpilensError("--max-size must be at least 1 byte")
    exe = _program(a.mpi)
    cmd = _launcher(a) + [str(exe), "--mode", "pingpong", "--max-size", str(max_size),
                          "--iters-scale", str(a.iters_scale)]
    if a.repeat < 1:
        raise MpilensError("--repeat must be at least 1")
    runs: list[list[dict]] = []
    comments: list[str] = []
    for _ in range(a.repeat):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
        except FileNotFoundError as err:
            raise LaunchError(f"cannot start {cmd[0]}: {err.strerror}") from err
        except subprocess.TimeoutExpired as err:
            raise LaunchError(f"the ping-pong job did not finish within {a.timeout:g} s") from err
        if p.returncode != 0:
            tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
            raise LaunchError(f"{' '.join(cmd)} exited {p.returncode}: {tail}")
        comments = [line for line in p.stdout.splitlines() if line.startswith("#")]
        body = "\n".join(line for line in p.stdout.splitlines() if line and not line.startswith("#"))
        rows = list(csv.DictReader(io.StringIO(body)))
        if not rows or "latency_us" not in rows[0]:
            raise MpilensError(f"unexpected output of {exe.name}: {p.stdout[:200]!r}")
        runs.append(rows)
    sizes = [int(r["size_bytes"]) for r in runs[0]]
    table = []
    for i, size in enumerate(sizes):
        lat = statistics.median(float(run[i]["latency_us"]) for run in runs)
        bw = statistics.median(float(run[i]["bandwidth_MBps"]) for run in runs)
        table.append({"size_bytes": size, "latency_us": lat, "bandwidth_MBps": bw})
    text = "".join(f"{c}\n" for c in comments) + f"# mpilens bench pingpong: {' '.join(cmd)}, median of " \
        f"{a.repeat} run{'s' if a.repeat != 1 else ''}\n" \
        "size_bytes,latency_us,bandwidth_MBps\n" + "".join(
            f"{r['size_bytes']},{r['latency_us']:.6g},{r['bandwidth_MBps']:.6g}\n" for r in table)
    if a.output:
        try:
            safefile.write_text(a.output, text)
        except OSError as err:
            raise MpilensError(f"cannot write {a.output}: {err.strerror}") from err
    if a.json:
        json.dump({"schema": "mpilens.bench.pingpong/1", "command": cmd, "repeat": a.repeat,
                   "mpi": comments[0][2:] if comments else None,
                   "units": {"latency": "us (half round trip), median over the repeats",
                             "bandwidth": "MB/s (10^6 B/s), window of 64, median over the repeats"},
                   "output": str(a.output) if a.output else None, "table": table}, sys.stdout, indent=1)
        print()
    elif a.output:
        best = max(table, key=lambda r: r["bandwidth_MBps"])
        print(f"mpilens bench pingpong: {len(table)} sizes, latency {table[0]['latency_us']:.3g} us at "
              f"{table[0]['size_bytes']} B, peak bandwidth {best['bandwidth_MBps']:.0f} MB/s at {best['size_bytes']} B; "
              f"wrote {a.output}")
    else:
        sys.stdout.write(text)
    return 0
