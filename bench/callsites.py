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

With --selfloop it also times those one-rank loops (no partner to wait for, so less exposed to
a loaded machine than the ping-pong), plain and at every depth in shuffled order per round.

With --python it times MPI calls made from Python on one rank (bench/pysites.py): a C extension's
MPI_Allreduce (examples/python/mixedext.c) and, with the MPI mpi4py is built for, mpi4py's
MPI_Barrier; plain and under the runtime at every depth, in shuffled order per round.

Usage: .venv/bin/python bench/callsites.py [--rounds N] [--mpi openmpi,mpich] [--depths 1,4,8]
       [--batches N] [--lib-dir DIR] [--callgrind] [--selfloop] [--python] [--no-timing]
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
           "| depth | latency 8 B (median of runs) | ratio to depth 0 (median of rounds) | added vs depth 0 "
           "(median of rounds) | 95 % CI | per MPI call |",
           "|---:|---:|---:|---:|---:|---:|"]
    for d in depths:
        med = statistics.median(lat[d])
        if d == 0:
            out.append(f"| 0 | {med:.3f} us | | | | |")
            continue
        ratio = statistics.median(a / b for a, b in zip(lat[d], lat[0]))
        diffs = [(a - b) * 1000 for a, b in zip(lat[d], lat[0])]
        m = statistics.median(diffs)
        lo, hi = bootstrap_median_ci(diffs)
        out.append(f"| {d} | {med:.3f} us | {ratio:.3f} | {m:+.1f} ns | [{lo:+.1f}, {hi:+.1f}] ns | {m / 2:+.1f} ns |")
    return out + [""]


def selfloop(mpi: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    """The one-rank loops of bench/selfloop.c (no partner to wait for: less exposed to a loaded
    machine than the ping-pong), plain and at every depth in shuffled order per round: ns per
    iteration, medians over the rounds of the differences and ratios to the plain program."""
    import hotpath

    src = args.lib_dir / f"libmpilens-{mpi}.so"
    lib = tmp / src.name
    shutil.copy2(src, lib)
    exe = hotpath.compile_selfloop(mpi)
    depths: list[int | None] = [None, 0] + [d for d in args.depths if d != 0]
    ns: dict[tuple[str, int | None], list[float]] = {}
    rng = random.Random(5)
    for r in range(args.rounds):
        for loop in CG_LOOPS:
            order = depths[:]
            rng.shuffle(order)
            for d in order:
                hotpath.SETTINGS.clear()
                if d is not None:
                    hotpath.SETTINGS["MPILENS_CALLSITE_DEPTH"] = str(d)
                out = hotpath.run(exe, [loop, str(hotpath.ITERS[loop] // 4)], lib if d is not None else None, tmp)
                m = hotpath.LINE_RE.search(out)
                if m is None:
                    raise BenchError(f"unexpected output of selfloop {loop}: {out}")
                ns.setdefault((loop, d), []).append(float(m.group(1)))
        log(f"{mpi}: selfloop round {r + 1}/{args.rounds}")
    out = [f"### {MPI_NAMES[mpi]}: one-rank loops, ns per iteration ({args.rounds} rounds; added to plain, median of "
           "rounds, and ratio to plain)", "",
           "| loop | plain | " + " | ".join(f"depth {d}" for d in depths if d is not None) + " |",
           "|---|---:|" + "---:|" * (len(depths) - 1)]
    for loop in CG_LOOPS:
        plain = ns[(loop, None)]
        cells = []
        for d in depths[1:]:
            diff = statistics.median(b - a for a, b in zip(plain, ns[(loop, d)]))
            ratio = statistics.median(b / a for a, b in zip(plain, ns[(loop, d)]))
            cells.append(f"{diff:+.0f} ns ({ratio:.2f})")
        out.append(f"| {loop} | {statistics.median(plain):.0f} ns | " + " | ".join(cells) + " |")
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
        iters = hotpath.cg_iterations(loop)
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


def python_cost(mpi: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    """Time per MPI call made from Python (bench/pysites.py, one rank): plain, and under the
    runtime at every depth, in shuffled order per round; medians over the rounds."""
    import re
    import subprocess

    from overhead import base_env

    python = "/usr/bin/python3"
    cfg = subprocess.run([python + "-config", "--includes", "--extension-suffix"], capture_output=True, text=True)
    if cfg.returncode != 0:
        raise BenchError(f"{python}-config failed: `make deps` installs python3-dev")
    includes, suffix = cfg.stdout.split("\n")[:2]
    ext = ROOT / "build" / "bench" / mpi / "python"
    ext.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([f"mpicc.{mpi}", "-shared", "-fPIC", "-g", "-O2", *includes.split(),
                        str(ROOT / "examples" / "python" / "mixedext.c"), "-o", str(ext / f"mixedext{suffix}")],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"building mixedext.c failed:\n{p.stderr}")
    found = subprocess.run([python, "-c", "import mpi4py.MPI as m; print(m.__file__)"], capture_output=True, text=True)
    libs = subprocess.run(["ldd", found.stdout.strip()], capture_output=True, text=True).stdout if found.returncode == 0 else ""
    mode = "mpi4py" if libs and (("libmpich" in libs) == (mpi == "mpich")) else "plain"
    src = args.lib_dir / f"libmpilens-{mpi}.so"
    lib = tmp / src.name
    shutil.copy2(src, lib)
    depths: list[int | None] = [None, 0] + [d for d in args.depths if d != 0]
    res: dict[int | None, dict[str, list[float]]] = {d: {} for d in depths}
    rng = random.Random(11)
    for r in range(args.rounds):
        order = depths[:]
        rng.shuffle(order)
        for d in order:
            env = base_env()
            if d is not None:
                env.update(LD_PRELOAD=str(lib), MPILENS_MODE="profile", MPILENS_CALLSITE_DEPTH=str(d),
                           MPILENS_OUTPUT=str(tmp / f"py-{mpi}-{r}-{d}"))
            out = subprocess.run([python, str(ROOT / "bench" / "pysites.py"), str(ext), "20000", mode],
                                 capture_output=True, text=True, env=env, timeout=300)
            if out.returncode != 0:
                raise BenchError(f"bench/pysites.py failed:\n{out.stderr[-2000:]}")
            for k, v in re.findall(r"(\w+)_ns=([\d.]+)", out.stdout):
                res[d].setdefault(k, []).append(float(v))
            shutil.rmtree(tmp / f"py-{mpi}-{r}-{d}", ignore_errors=True)
        log(f"{mpi}: python round {r + 1}/{args.rounds}")
    kinds = {"ext": "C extension's MPI_Allreduce (GIL held)", "mpi4py": "mpi4py's MPI_Barrier"}
    out = [f"### {MPI_NAMES[mpi]}: MPI calls from Python, one rank ({mode}; {args.rounds} rounds, medians)", "",
           "| call | plain | " + " | ".join(f"depth {d}" for d in depths if d is not None) + " |",
           "|---|---:|" + "---:|" * (len(depths) - 1)]
    for k, label in kinds.items():
        if k not in res[None]:
            continue
        base = statistics.median(res[None][k])
        cells = [f"{statistics.median(res[d][k]):.0f} ns ({statistics.median(res[d][k]) - base:+.0f})"
                 for d in depths if d is not None]
        out.append(f"| {label} | {base:.0f} ns | " + " | ".join(cells) + " |")
    return out + [""]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--depths", default="1,4,8", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--batches", type=int, default=15)
    p.add_argument("--lib-dir", type=Path, default=ROOT / "build" / "lib")
    p.add_argument("--callgrind", action="store_true", help="also count instructions with valgrind")
    p.add_argument("--no-timing", action="store_true", help="no ping-pong timing (with --callgrind, --selfloop or --python)")
    p.add_argument("--selfloop", action="store_true", help="also time the one-rank loops of bench/selfloop.c")
    p.add_argument("--python", action="store_true", help="also time MPI calls made from Python (mpi4py, C extension)")
    args = p.parse_args()
    lines = []
    with tempfile.TemporaryDirectory(prefix="mpilens-callsites-bench-") as t:
        try:
            for mpi in args.mpi.split(","):
                if not args.no_timing:
                    lines += bench(mpi, args, Path(t))
                if args.callgrind:
                    lines += instructions(mpi, args, Path(t))
                if args.selfloop:
                    lines += selfloop(mpi, args, Path(t))
                if args.python:
                    lines += python_cost(mpi, args, Path(t))
        except BenchError as err:
            print(f"bench/callsites.py: {err}", file=sys.stderr)
            return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
