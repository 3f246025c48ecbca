#!/usr/bin/env python3
"""Cost of call sites (MPILENS_CALLSITE_DEPTH) in profile mode, on the 8-byte ping-pong.

The method of bench/overhead.py, with the plain program replaced by the tool at depth 0: each
round runs bench/pingpong.c (2 ranks) once under the runtime at every depth given (depth 0
included), in an order shuffled per round, so that drift of the machine's load hits all depths
alike. From each run: the median one-way latency over its timed batches (8 B). Per round and
depth d: latency(d) - latency(0). Reported per depth: the median of these differences over the
rounds with a bootstrap 95 % interval, and the cost per MPI call, half of it (one hop of the
ping-pong is one MPI_Send on the sender and one MPI_Recv on the receiver, in sequence).

With --callgrind (valgrind needed) it also counts instructions, which a loaded machine does not
blur: the one-rank loops of bench/selfloop.c (bench/hotpath.py: send = MPI_Irecv + MPI_Send +
MPI_Wait, recv = MPI_Isend + MPI_Recv + MPI_Wait, isend = MPI_Irecv + MPI_Isend + 2 MPI_Wait)
under callgrind, plain and under the runtime at every depth: instructions per loop iteration
added to the plain program, and per call of the runtime's own functions.

Usage: .venv/bin/python bench/callsites.py [--rounds N] [--mpi openmpi,mpich] [--depths 1,4,8]
       [--batches N] [--lib-dir DIR] [--callgrind] [--no-timing]
"""
from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import MPI_NAMES, ROOT, BenchError, bootstrap_median_ci, compile_programs, log, run_once, sha256  # noqa: E402


def bench(mpi: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    src = args.lib_dir / f"libmpilens-{mpi}.so"
    lib = tmp / src.name
    shutil.copy2(src, lib)
    exe_dir = compile_programs(mpi)
    depths = [0] + [d for d in args.depths if d != 0]
    lat: dict[int, list[float]] = {d: [] for d in depths}
    counter = [0]
    rng = random.Random(7)
    t0 = time.monotonic()
    for r in range(args.rounds):
        order = depths[:]
        rng.shuffle(order)
        for d in order:
            values, _ = run_once(mpi, "pingpong", exe_dir, [str(args.batches), "1.0"], "core", lib, tmp, counter,
                                 300, "profile", None, {"MPILENS_CALLSITE_DEPTH": str(d)})
            lat[d].append(values[8])
        log(f"{mpi}: round {r + 1}/{args.rounds} ({time.monotonic() - t0:.0f} s)")
    out = [f"### {MPI_NAMES[mpi]} (runtime sha256 {sha256(lib)[:12]}, {args.rounds} rounds)", "",
           "| depth | latency 8 B (median of runs) | added vs depth 0 (median of rounds) | 95 % CI | per MPI call |",
           "|---:|---:|---:|---:|---:|"]
    for d in depths:
        med = statistics.median(lat[d])
        if d == 0:
            out.append(f"| 0 | {med:.3f} us | | | |")
            continue
        diffs = [(a - b) * 1000 for a, b in zip(lat[d], lat[0])]
        m = statistics.median(diffs)
        lo, hi = bootstrap_median_ci(diffs)
        out.append(f"| {d} | {med:.3f} us | {m:+.1f} ns | [{lo:+.1f}, {hi:+.1f}] ns | {m / 2:+.1f} ns |")
    return out + [""]


CG_LOOPS = ("send", "recv", "isend")


def instructions(mpi: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    """Instructions per loop iteration (callgrind) at every depth, minus the plain program's."""
    import hotpath

    if shutil.which("valgrind") is None:
        raise BenchError("valgrind not found (apt-get install valgrind)")
    src = args.lib_dir / f"libmpilens-{mpi}.so"
    lib = tmp / src.name
    shutil.copy2(src, lib)
    exe = hotpath.compile_selfloop(mpi)
    depths = [0] + [d for d in args.depths if d != 0]
    added: dict[tuple[str, int], float] = {}
    mine: dict[tuple[str, int], float] = {}
    for loop in CG_LOOPS:
        n = hotpath.CG_ITERS[loop]
        iters = n // 10 + 1 + 11 * n  # warm-up + 11 batches, as selfloop.c runs them
        log(f"{mpi}: callgrind, loop {loop}")
        runs = {}
        for d in [None, *depths]:
            hotpath.SETTINGS.clear()
            if d is not None:
                hotpath.SETTINGS["MPILENS_CALLSITE_DEPTH"] = str(d)
            out = tmp / f"cg.{mpi}.{loop}.{d}"
            hotpath.run(exe, [loop, str(n)], lib if d is not None else None, tmp,
                        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect=loop_{loop}"])
            self_ir, _, obj, total = hotpath.cg_parse(out)
            runs[d] = total / iters
            if d is not None:
                mine[(loop, d)] = sum(ir for fn, ir in self_ir.items() if "libmpilens" in obj.get(fn, "")) / iters
        for d in depths:
            added[(loop, d)] = runs[d] - runs[None]
    head = " | ".join(f"depth {d}" for d in depths)
    out = [f"### {MPI_NAMES[mpi]}: instructions per loop iteration (callgrind, runtime sha256 {sha256(lib)[:12]})", "",
           f"| loop | {head} |", "|---|" + "---:|" * len(depths)]
    for loop in CG_LOOPS:
        cells = " | ".join(f"+{added[(loop, d)]:,.0f} ({mine[(loop, d)]:,.0f} in mpilens)".replace(",", " ")
                           for d in depths)
        out.append(f"| {loop} | {cells} |")
    # the blocking pair MPI_Send + MPI_Recv that one hop of a ping-pong pays: send + recv - isend
    pair = {d: added[("send", d)] + added[("recv", d)] - added[("isend", d)] for d in depths}
    out += ["", "MPI_Send + MPI_Recv (send + recv - isend), instructions added by the runtime: "
            + ", ".join(f"depth {d} {pair[d]:+.0f}" + (f" ({pair[d] - pair[0]:+.0f} vs depth 0)" if d else "")
                        for d in depths), ""]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--depths", default="1,4,8", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--batches", type=int, default=15)
    p.add_argument("--lib-dir", type=Path, default=ROOT / "build" / "lib")
    p.add_argument("--callgrind", action="store_true", help="also count instructions with valgrind")
    p.add_argument("--no-timing", action="store_true", help="only the instruction counts (with --callgrind)")
    args = p.parse_args()
    lines = []
    with tempfile.TemporaryDirectory(prefix="mpilens-callsites-bench-") as t:
        try:
            for mpi in args.mpi.split(","):
                if not args.no_timing:
                    lines += bench(mpi, args, Path(t))
                if args.callgrind:
                    lines += instructions(mpi, args, Path(t))
        except BenchError as err:
            print(f"bench/callsites.py: {err}", file=sys.stderr)
            return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
