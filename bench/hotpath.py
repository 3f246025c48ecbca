#!/usr/bin/env python3
"""Cost of the mpilens wrappers per MPI call, measured on one rank without a partner (less noise
than the two-rank benchmarks of overhead.py, and what explains their results).

For each MPI it compiles bench/selfloop.c into build/bench/<mpi>/selfloop and

- times (interleaved pairs, plain vs. LD_PRELOAD of the runtime) the loops of selfloop.c:
    send   = MPI_Irecv + MPI_Send + MPI_Wait        recv   = MPI_Isend + MPI_Recv + MPI_Wait
    isend  = MPI_Irecv + MPI_Isend + 2 MPI_Wait     window = 64 MPI_Irecv + 64 MPI_Isend + MPI_Waitall(128)
  and derives the added cost of the blocking pair MPI_Send + MPI_Recv (= send + recv - isend),
  which is what one hop of a ping-pong pays;
- prints what the building blocks cost on this machine (selfloop pieces);
- with --callgrind (valgrind needed): instructions per loop iteration with and without the tool,
  and the runtime's own functions (self instructions per call), from callgrind.

--mode trace measures the runs with mpilens in trace mode (each call also writes a trace record).
--mode papi: papi mode with the default events, read before and after every MPI call
(MPILENS_PAPI_READ=calls); --mode papi-regions: read at region boundaries only (the loops have none).

--compare NAME=DIR (repeatable) counts instructions only, with callgrind, for each runtime build
in turn (DIR holds libmpilens-<mpi>.so): one line per MPI and loop, instructions added per
iteration by each build (the window loop's per Isend + Irecv pair, that is per 64th of an
iteration). Deterministic, so it compares builds on a busy machine. With --cache-sim it also
counts the L1 data-cache misses each build adds (callgrind's cache simulation, the cache sizes
valgrind reads from this CPU), inside the loop only: the cost instruction counts do not show,
where the tool's data evicts the MPI's. --thread multiple runs every loop under
MPI_THREAD_MULTIPLE, where the runtime keeps requests in its process-wide table. --floor adds
bench/floor.c's shims as builds of their own (bench/paired.py --floor says what each does); they
wrap only the calls of the window loop, which is the only loop they are counted on.

Usage: .venv/bin/python bench/hotpath.py [--reps N] [--mpi openmpi,mpich] [--mode profile|trace|papi|papi-regions]
       [--set MPILENS_K=V ...] [--iters-div N] [--callgrind] [--lib-dir DIR] [--thread single|multiple]
       .venv/bin/python bench/hotpath.py --compare before=DIR --compare after=DIR [--loops window,send] [--mode ...]
                                         [--cache-sim] [--thread single|multiple] [--floor]
"""
from __future__ import annotations

import argparse
import collections
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import MPI_NAMES, ROOT, BenchError, base_env, compile_program, log, named_dirs, sha256  # noqa: E402
from paired import FLOORS, compile_floors  # noqa: E402

MODES = ("send", "recv", "isend", "window")
CG_ITERS = {"send": 2000, "recv": 2000, "isend": 2000, "window": 100}


def cg_iterations(loop: str) -> int:
    """Iterations of a loop under callgrind: bench/selfloop.c runs a tenth of them (plus one) as
    warm-up, then 11 batches."""
    n = CG_ITERS[loop]
    return n // 10 + 1 + 11 * n
ITERS = {"send": 200000, "recv": 200000, "isend": 200000, "window": 3000}  # selfloop's defaults
LINE_RE = re.compile(r"ns_per_iter=([\d.]+)")


def compile_selfloop(mpi: str) -> Path:
    return compile_program(mpi, "selfloop")


SETTINGS: dict[str, str] = {}  # --set K=V: more MPILENS_* settings of the runs with mpilens


def run(exe: Path, args: list[str], lib: Path | None, tmp: Path, prefix: list[str] | None = None,
        tool_mode: str = "profile") -> str:
    env = base_env()
    if lib is not None:
        env.update(SETTINGS)
        env["LD_PRELOAD"] = str(lib)
        env["MPILENS_MODE"] = "profile,papi" if tool_mode.startswith("papi") else tool_mode
        if tool_mode == "papi-regions":
            env["MPILENS_PAPI_READ"] = "regions"
        env["MPILENS_OUTPUT"] = tempfile.mkdtemp(dir=tmp) + "/run"
    r = subprocess.run([*(prefix or []), str(exe), *args], capture_output=True, text=True, env=env, timeout=600,
                       cwd=tmp)
    if r.returncode != 0:
        raise BenchError(f"{exe} {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-2000:]}")
    if lib is not None:
        shutil.rmtree(Path(env["MPILENS_OUTPUT"]).parent, ignore_errors=True)
    return r.stdout


def timing(exe: Path, lib: Path, tmp: Path, reps: int, tool_mode: str = "profile",
           div: int = 1, thread: list[str] | None = None) -> dict[str, tuple[float, float, float]]:
    plain: dict[str, list[float]] = collections.defaultdict(list)
    tool: dict[str, list[float]] = collections.defaultdict(list)
    for rep in range(reps):
        for mode in MODES:
            for with_tool in ((True, False) if rep % 2 else (False, True)):
                out = run(exe, [mode, str(max(ITERS[mode] // div, 10)), *(thread or [])], lib if with_tool else None,
                          tmp, tool_mode=tool_mode)
                m = LINE_RE.search(out)
                if m is None:
                    raise BenchError(f"unexpected output of selfloop {mode}: {out}")
                (tool if with_tool else plain)[mode].append(float(m.group(1)))
    res = {}
    for mode in MODES:
        diffs = [b - a for a, b in zip(plain[mode], tool[mode])]
        res[mode] = (statistics.median(plain[mode]), statistics.median(tool[mode]), statistics.median(diffs))
    return res


def cg_totals(path: Path) -> dict[str, int]:
    """The totals of a callgrind file, per event (Ir; with --cache-sim=yes also D1mr, D1mw, ...)."""
    events: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            return dict(zip(events, (int(v) for v in line.split()[1:])))
    raise BenchError(f"{path}: no totals")


def cg_parse(path: Path) -> tuple[collections.Counter, collections.Counter, dict[str, str], int]:
    """Self Ir, number of calls received and object file of every function of a callgrind file, and
    its total Ir."""
    pools: dict[str, dict[str, str]] = {"fn": {}, "ob": {}, "fl": {}}
    pool_of = {"fn": "fn", "cfn": "fn", "ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl",
               "cfi": "fl", "cfl": "fl"}

    def name(kind: str, val: str) -> str:
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", val)
        if not m:
            return val
        d = pools[pool_of[kind]]
        if m.group(2) is not None:
            d[m.group(1)] = m.group(2)
        return d.get(m.group(1), "?")

    self_ir: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    obj: dict[str, str] = {}
    fn = ob = cfn = None
    pending = None
    for line in path.read_text().splitlines():
        if not line:
            continue
        key, _, val = line.partition("=")
        if key in pool_of and _:
            v = name(key, val)
            if key == "fn":
                fn = v
                obj.setdefault(fn, ob or "")
            elif key == "ob":
                ob = v
            elif key == "cfn":
                cfn = v
            continue
        if key == "calls" and _:
            pending = int(val.split()[0])
            continue
        if line[0].isdigit() or line[0] in "+-*":
            parts = line.split()
            if pending is not None:
                calls[cfn] += pending
                pending = None
            elif len(parts) > 1 and fn is not None:
                self_ir[fn] += int(parts[1])
    return self_ir, calls, obj, cg_totals(path)["Ir"]


class CgCounts(NamedTuple):
    """Per loop iteration, without and with the tool: instructions, and (cache simulation only)
    L1 data-cache misses; the runtime's functions (name, calls per iteration, Ir per call)."""
    ir_plain: float
    ir_tool: float
    table: list[tuple[str, float, float]]
    d1_plain: float | None = None
    d1_tool: float | None = None


def callgrind(exe: Path, lib: Path, tmp: Path, mode: str, tool_mode: str = "profile",
              cache_sim: bool = False, thread: list[str] | None = None) -> CgCounts:
    n = CG_ITERS[mode]
    iters = cg_iterations(mode)
    ir, d1 = [], []
    table: list[tuple[str, float, float]] = []
    for with_tool in (False, True):
        out = tmp / f"cg.{mode}.{int(with_tool)}"
        run(exe, [mode, str(n), *(thread or [])], lib if with_tool else None, tmp,
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect=loop_{mode}",
             *(["--cache-sim=yes"] if cache_sim else [])],
            tool_mode=tool_mode)
        self_ir, calls, obj, total = cg_parse(out)
        ir.append(total / iters)
        if cache_sim:
            totals = cg_totals(out)
            d1.append((totals["D1mr"] + totals["D1mw"]) / iters)
        if with_tool:
            for fn, n_ir in self_ir.most_common():
                if "libmpilens" in obj.get(fn, ""):
                    table.append((fn, calls.get(fn, 0) / iters, n_ir / max(calls.get(fn, 0), 1)))
    return CgCounts(ir[0], ir[1], table, *(d1 or [None, None]))


def compare(builds: dict[str, Path], mpis: list[str], loops: list[str], tool_mode: str, tmp: Path,
            cache_sim: bool = False, thread: list[str] | None = None, floor: bool = False) -> None:
    """Instructions (and with cache_sim L1 data misses) added per loop iteration by each runtime
    build (callgrind), and by bench/floor.c's shims (floor); thread: selfloop's thread-level
    argument ([] or ["multiple"])."""
    if shutil.which("valgrind") is None:
        raise BenchError("valgrind not found (apt-get install valgrind)")
    if floor and loops != ["window"]:
        raise BenchError("--floor counts the window loop only (--loops window): the floors wrap no MPI_Wait")
    names = list(builds) + (list(FLOORS) if floor else [])
    print(f"Instructions added per iteration (callgrind, MPILENS_MODE={tool_mode}"
          + (", MPI_THREAD_MULTIPLE" if thread else "") + "; window: per Isend + Irecv pair)"
          + ("; in brackets, simulated L1 data-cache misses" if cache_sim else "") + "\n")
    print("| MPI | loop | plain | " + " | ".join(names) + " |")
    print("|---|---|---:|" + "---:|" * len(names))
    for mpi in mpis:
        exe = compile_selfloop(mpi)
        libs = {name: d / f"libmpilens-{mpi}.so" for name, d in builds.items()}
        libs.update(compile_floors(mpi) if floor else {})
        for mode in loops:
            per = 64 if mode == "window" else 1
            cells, plain = [], 0.0
            for i, src in enumerate(libs.values()):
                if not src.is_file():
                    raise BenchError(f"{src} is missing")
                lib = tmp / f"build{i}-{src.name}"
                shutil.copy2(src, lib)
                c = callgrind(exe, lib, tmp, mode, tool_mode, cache_sim, thread)
                plain = f"{c.ir_plain / per:.0f}"
                cells.append(f"+{(c.ir_tool - c.ir_plain) / per:.0f}")
                if c.d1_plain is not None and c.d1_tool is not None:
                    plain += f" ({c.d1_plain / per:.1f})"
                    cells[-1] += f" ({(c.d1_tool - c.d1_plain) / per:+.1f})"
            print(f"| {MPI_NAMES[mpi]} | {mode} | {plain} | " + " | ".join(cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=9, help="interleaved plain/tool pairs per loop (default 9)")
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--callgrind", action="store_true", help="also count instructions with valgrind")
    p.add_argument("--mode", choices=("profile", "trace", "papi", "papi-regions"), default="profile",
                   help="MPILENS_MODE of the runs with mpilens")
    p.add_argument("--set", action="append", default=[], metavar="K=V", help="an MPILENS_* setting of the tool runs")
    p.add_argument("--iters-div", type=int, default=1, help="run the loops for 1/N of their iterations (papi mode)")
    p.add_argument("--lib-dir", type=Path, default=ROOT / "build" / "lib",
                   help="where libmpilens-<mpi>.so is (default build/lib)")
    p.add_argument("--compare", action="append", default=[], metavar="NAME=DIR",
                   help="only count instructions (callgrind), for each of these runtime builds")
    p.add_argument("--loops", default=",".join(MODES), help="with --compare: the loops (default: all)")
    p.add_argument("--thread", choices=("single", "multiple"), default="single",
                   help="multiple: the loops under MPI_THREAD_MULTIPLE (the runtime's process-wide request table)")
    p.add_argument("--cache-sim", action="store_true",
                   help="with --compare: also count the L1 data-cache misses added (callgrind's cache simulation)")
    p.add_argument("--floor", action="store_true",
                   help="with --compare and --loops window: also count bench/floor.c's shims")
    args = p.parse_args(argv)
    if (args.cache_sim or args.floor) and not args.compare:
        p.error("--cache-sim and --floor count with --compare NAME=DIR")
    SETTINGS.update(kv.split("=", 1) for kv in args.set)
    thread = ["multiple"] if args.thread == "multiple" else []
    tmp = Path(tempfile.mkdtemp(prefix="mpilens-hotpath-"))
    mpis = [m.strip() for m in args.mpi.split(",") if m.strip()]
    try:
        if args.compare:
            compare(named_dirs(args.compare, "--compare"), mpis, [m for m in args.loops.split(",") if m], args.mode,
                    tmp, args.cache_sim, thread, args.floor)
            return 0
        for mpi in mpis:
            src = args.lib_dir / f"libmpilens-{mpi}.so"
            if not src.is_file():
                raise BenchError(f"{src} is missing")
            lib = tmp / src.name
            shutil.copy2(src, lib)
            exe = compile_selfloop(mpi)
            log(f"{MPI_NAMES[mpi]}: timing {len(MODES)} loops x {args.reps} pairs ...")
            print(f"### {MPI_NAMES[mpi]} (runtime sha256 {sha256(lib)[:12]})\n")
            print("Building blocks (selfloop pieces, ns per operation):\n")
            for line in run(exe, ["pieces"], None, tmp).splitlines():
                if line.startswith("pieces "):
                    label, val = line[len("pieces "):].rsplit(None, 2)[0], line.rsplit(None, 2)[1]
                    print(f"- {label.strip()}: {float(val):.1f} ns")
            t = timing(exe, lib, tmp, args.reps, args.mode, args.iters_div, thread)
            print("\n| loop (one rank, 8 B to self) | without (ns/iter) | with (ns/iter) | added (median of pairs) |")
            print("|---|---:|---:|---:|")
            for mode in MODES:
                a, b, d = t[mode]
                extra = f" = {d / 64:.1f} ns per message" if mode == "window" else ""
                print(f"| {mode} | {a:.1f} | {b:.1f} | {d:+.1f} ns{extra} |")
            pair = t["send"][2] + t["recv"][2] - t["isend"][2]
            print(f"\nDerived: MPI_Send + MPI_Recv wrappers add {pair:.1f} ns together (send + recv - isend).\n")
            if args.callgrind:
                if shutil.which("valgrind") is None:
                    raise BenchError("valgrind not found (apt-get install valgrind)")
                log(f"{MPI_NAMES[mpi]}: callgrind ...")
                print("| loop | Ir/iter without | Ir/iter with | added Ir/iter |")
                print("|---|---:|---:|---:|")
                tables = {}
                for mode in MODES:
                    c = callgrind(exe, lib, tmp, mode, args.mode, thread=thread)
                    tables[mode] = c.table
                    print(f"| {mode} | {c.ir_plain:.0f} | {c.ir_tool:.0f} | {c.ir_tool - c.ir_plain:+.0f} |")
                for mode in ("isend", "send"):
                    print(f"\nRuntime functions in the `{mode}` loop (self instructions; inlined code counts "
                          "in its caller):\n")
                    print("| function | calls/iter | Ir per call |")
                    print("|---|---:|---:|")
                    for fn, per_iter, per_call in tables[mode]:
                        print(f"| {fn} | {per_iter:.2f} | {per_call:.1f} |")
                print()
    except BenchError as e:
        log(f"hotpath.py: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
