#!/usr/bin/env python3
"""How long the merge of per-rank payloads into profile.json takes as the number of ranks grows,
and (--report) how long the analyses of the resulting run directory take.

Writes synthetic payloads (the layout of runtime/spec/rundir.yaml, through mpilens._layout) of a
3-D stencil: each rank sends to its 6 neighbours with MPI_Isend/MPI_Irecv/MPI_Waitall, reduces with
MPI_Allreduce, in 3 nested regions, with 2 user counters and call sites two frames deep; then times mpilens-merge on them (the
merge rank 0 runs at MPI_Finalize, and `mpilens report` on partial runs), median of --reps runs,
with its peak memory. With --report, each size also becomes a run directory (that profile.json
and a meta.json of 32 ranks per host), on which `mpilens report`, `mpilens report --html` and
mpilens.frames (load, functions, matrix, ranks) are timed, each in a fresh process, with their
peak memory and the HTML page's size.

With --tree, the same payloads also go through MPI_Finalize's reduction up a binomial tree, in one
process (bench/merge_tree.c, built here against runtime/src/core/merge.c): its critical path and
its work against the merge of every payload at once, and the most rank 0 holds of the others' data
(the largest part it receives in a round) against what it held before (every payload).

  bench/merge.py [--ranks 64,1024,8192] [--reps 3] [--report] [--tree]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from mpilens import _layout as L  # noqa: E402

FUNCTIONS = [("MPI_Isend", L.FUNCTION_CLASS_P2P), ("MPI_Irecv", L.FUNCTION_CLASS_P2P),
             ("MPI_Waitall", L.FUNCTION_CLASS_COMPLETION), ("MPI_Allreduce", L.FUNCTION_CLASS_COLLECTIVE),
             ("MPI_Barrier", L.FUNCTION_CLASS_COLLECTIVE), ("MPI_Comm_rank", L.FUNCTION_CLASS_SETUP)]
REGIONS = [(1, 0, "timestep"), (2, 1, "halo"), (3, 1, "solve")]


def string(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def table(rows: list[bytes]) -> bytes:
    return struct.pack("<I", len(rows)) + b"".join(rows)


def neighbours(rank: int, dims: tuple[int, int, int]) -> list[int]:
    x, y, z = rank % dims[0], rank // dims[0] % dims[1], rank // (dims[0] * dims[1])
    out = []
    for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
        out.append((x + dx) % dims[0] + (y + dy) % dims[1] * dims[0] + (z + dz) % dims[2] * dims[0] * dims[1])
    return out


def payload(rank: int, nranks: int, dims: tuple[int, int, int]) -> bytes:
    steps, halo = 1000, 8 * 64 * 64
    head = L.PAYLOAD_HEAD.pack(L.MAGIC_PAYLOAD, 0, rank, nranks, 1, L.END_REASON_FINALIZE, 0, 1, 10**10,
                               2 * 10**9, 0, 10**8, 0, 0, 0, 0, 0)
    regions = [L.PAYLOAD_REGION.pack(p, parent, steps, 10**9) + string(name) for p, parent, name in REGIONS]
    functions = [L.PAYLOAD_FUNCTION.pack(i, cls) + string(name) for i, (name, cls) in enumerate(FUNCTIONS)]
    stats = [L.PAYLOAD_STAT.pack(2, 0, 6 * steps, 10**7, 500, 9000, 6 * steps, 0, 6 * steps * halo, 0),
             L.PAYLOAD_STAT.pack(2, 1, 6 * steps, 10**7, 400, 8000, 6 * steps, 0, 0, 6 * steps * halo),
             L.PAYLOAD_STAT.pack(2, 2, steps, 10**9, 10**4, 10**7, steps, 0, 0, 0),
             L.PAYLOAD_STAT.pack(3, 3, steps, 10**8, 10**4, 10**6, steps, 0, 8 * steps, 8 * steps),
             L.PAYLOAD_STAT.pack(0, 4, 2, 10**6, 10**5, 9 * 10**5, 2, 0, 0, 0),
             L.PAYLOAD_STAT.pack(0, 5, 1, 100, 100, 100, 1, 0, 0, 0)]
    sizes = [L.PAYLOAD_SIZE.pack(0, 16, 6 * steps, 10**7), L.PAYLOAD_SIZE.pack(1, 16, 6 * steps, 10**7),
             L.PAYLOAD_SIZE.pack(3, 4, steps, 10**8)]
    matrix = [L.PAYLOAD_PEER.pack(d, steps, steps * halo) for d in sorted(set(neighbours(rank, dims)))]
    cnames = [L.PAYLOAD_COUNTER_NAME.pack(0, L.COUNTER_KIND_SUM) + string("cells"),
              L.PAYLOAD_COUNTER_NAME.pack(1, L.COUNTER_KIND_LAST) + string("residual")]
    counters = [L.PAYLOAD_COUNTER.pack(3, 0, 1e6, steps, 10**9), L.PAYLOAD_COUNTER.pack(3, 1, 1e-6, steps, 10**9)]
    # call sites at depth 2: each function called from one place of the program's solver, which the
    # stencil's main calls (the same modules and addresses on every rank, as with one executable)
    modules = [L.PAYLOAD_MODULE.pack(0, 0x400000) + string("/opt/apps/stencil/bin/stencil"),
               L.PAYLOAD_MODULE.pack(1, 0x7f0000000000) + string("/opt/apps/stencil/lib/libsolver.so")]
    sites = [L.PAYLOAD_SITE.pack(i, i, 2, 6 * steps, 10**7, 0, 0) for i in range(len(FUNCTIONS))]
    frames = [f for i in range(len(FUNCTIONS))
              for f in (L.PAYLOAD_FRAME.pack(i, 0, 1, 0x1000 + 16 * i), L.PAYLOAD_FRAME.pack(i, 1, 0, 0x2000))]
    body = (string(f"node{rank // 32:05d}") + table(regions) + table(functions) + table(stats) + table(sizes)
            + table(matrix) + table(cnames) + table(counters) + L.PAYLOAD_CALLSITES.pack(2) + table(modules)
            + table(sites) + table(frames) + L.PAYLOAD_TAIL.pack(0, 0, L.MAGIC_PAYLOAD_END))
    data = bytearray(head + body)
    struct.pack_into("<Q", data, 8, len(data))
    return bytes(data)


def dims_of(n: int) -> tuple[int, int, int]:
    best = (n, 1, 1)
    for x in range(1, n + 1):
        for y in range(1, n // x + 1):
            if n % (x * y) == 0:
                z = n // (x * y)
                if max(x, y, z) < max(best):
                    best = (x, y, z)
    return best


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak memory (MiB) of a command run in a fresh process (GNU time)."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, int(p.stderr.strip().splitlines()[-1]) / 1024


FRAMES = """
import sys, mpilens
run = mpilens.load(sys.argv[1])
mpilens.frames.functions(run); mpilens.frames.matrix(run); mpilens.frames.ranks(run)
"""


def report_rows(run: Path, n: int) -> str:
    meta = {"schema": L.SCHEMA_META, "tool": {"name": "mpilens"}, "nranks": n,
            "mpi": {"flavor": "synthetic", "library": "synthetic payloads (bench/merge.py)"},
            "hosts": [f"node{i:05d}" for i in range((n + 31) // 32)], "rank_host": [r // 32 for r in range(n)],
            "program": "stencil", "command": ["mpirun", "-np", str(n), "stencil"], "config": {}}
    (run / "meta.json").write_text(json.dumps(meta))
    mpilens = str(ROOT / ".venv" / "bin" / "mpilens")
    t_text, m_text = timed([mpilens, "report", str(run)])
    html = run / "report.html"
    t_html, m_html = timed([mpilens, "report", str(run), "--html", str(html)])
    t_df, m_df = timed([sys.executable, "-c", FRAMES, str(run)])
    return (f"| {n} | {t_text:.1f} s, {m_text:.0f} MiB | {t_html:.1f} s, {m_html:.0f} MiB, "
            f"{html.stat().st_size / 1e6:.1f} MB | {t_df:.1f} s, {m_df:.0f} MiB |")


def tree_program() -> Path:
    """bench/merge_tree.c built with the runtime's merge, as the runtime builds it (-O2)."""
    exe = ROOT / "build" / "bench" / "merge_tree"
    exe.parent.mkdir(parents=True, exist_ok=True)
    core = ROOT / "runtime" / "src" / "core"
    subprocess.run(["cc", "-std=c11", "-O2", f"-I{core}", f"-I{ROOT / 'build' / 'gen'}", "-o", str(exe),
                    str(ROOT / "bench" / "merge_tree.c"), str(core / "merge.c"), str(core / "json.c"), "-lm"],
                   check=True)
    return exe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="64,1024,8192")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--report", action="store_true", help="also time the report, HTML and DataFrames")
    ap.add_argument("--tree", action="store_true", help="also MPI_Finalize's reduction up a tree (bench/merge_tree.c)")
    args = ap.parse_args()
    reports, trees = [], []
    tree_exe = tree_program() if args.tree else None
    exe = str(ROOT / "build" / "bin" / "mpilens-merge")  # the C merge as a program (make)
    print("| ranks | payload bytes | merge (median) | profile.json | peak memory |")
    print("|---:|---:|---:|---:|---:|")
    for n in (int(x) for x in args.ranks.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            all_payloads = Path(tmp) / "all.payloads"  # one file: the gather's buffer, as rank 0 has it
            dims = dims_of(n)
            with all_payloads.open("wb") as f:
                for r in range(n):
                    f.write(payload(r, n, dims))
            times = []
            run = Path(tmp) / "run"
            run.mkdir()
            for _ in range(args.reps):
                out = run / "profile.json"
                t0 = time.perf_counter()
                with out.open("w") as f:
                    subprocess.run([exe, "--nranks", str(n), str(all_payloads)], stdout=f, check=True)
                times.append(time.perf_counter() - t0)
            peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            print(f"| {n} | {all_payloads.stat().st_size / 1e6:.1f} MB | {statistics.median(times):.3f} s | "
                  f"{out.stat().st_size / 1e6:.1f} MB | {peak_kib / 1024:.0f} MiB |")
            if tree_exe is not None:
                t = json.loads(subprocess.run([str(tree_exe), str(all_payloads), str(n), str(args.reps)],
                                              capture_output=True, text=True, check=True).stdout)
                assert t["same"] == 1, t  # the reduction's profile is the same bytes
                trees.append(f"| {n} | {t['flat_s']:.3f} s | {t['tree_s']:.3f} s | {t['tree_work_s']:.3f} s | "
                             f"{t['gathered_bytes'] / 1e6:.2f} MB | {t['rank0_bytes'] / 1e6:.2f} MB | "
                             f"{t['rank0_total_bytes'] / 1e6:.2f} MB |")
            all_payloads.unlink()
            if args.report:
                reports.append(report_rows(run, n))
    if trees:
        print("\n| ranks | all at once (rank 0) | tree: critical path | tree: all ranks' work | rank 0 held: every "
              "payload | tree: the largest part rank 0 receives | tree: all it receives |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        print("\n".join(trees))
    if reports:
        print("\n| ranks | `mpilens report` | `--html` (time, memory, page) | DataFrames (load + 3 frames) |")
        print("|---:|---:|---:|---:|")
        print("\n".join(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
