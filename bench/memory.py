#!/usr/bin/env python3
"""Cost and agreement of memory mode (issue 6), in two parts.

1. Small-message rate (bench/msgrate.c, 8-byte messages between 2 ranks) in interleaved rounds of
   three runs each, in rotating order: plain (no tool), `mpilens run --mode memory` with the fast
   method, and `mpilens run` in profile mode (the part of the cost that is not memory mode's). The
   smaps method (memnesia's, PSS before and after every call) is far slower; it runs a few times
   with fewer windows per batch (the program reports messages per second either way). Reported:
   median rate per arm, median of the per-round ratios fast/plain with its range, and the tool's
   own memory per rank (PSS of its mappings and heap, from the memory files).
2. Peak MPI memory, fast against smaps, on memnesia's Trivial and Alltoall (examples/c/mem_*.c)
   at 1, 2, 4 and 8 ranks: the median over repeated runs of each method, their ratio, and the
   ratio of the two estimates of one smaps execution (its samples carry the allocation counters).

Usage: .venv/bin/python bench/memory.py [--rounds N] [--reps N] [--mpi openmpi,mpich] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import overhead  # noqa: E402  (compile_program, base_env)

from mpilens import memory  # noqa: E402

MPILENS = ROOT / ".venv" / "bin" / "mpilens"
MR_RE = re.compile(r"^msgrate bytes=(\d+) window=(\d+) median_msgs_per_s=([\d.]+)", re.M)
MiB = 2**20


def env() -> dict[str, str]:
    e = overhead.base_env()
    e.update(OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none",
             HYDRA_LAUNCHER="fork")
    return e


def launcher(mpi: str, np_: int) -> list[str]:
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--oversubscribe", "--bind-to", "none", "-np", str(np_)]
    return ["mpirun.mpich", "-np", str(np_)]


def run(cmd: list[str], timeout: float = 600) -> str:
    p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def msgrate(mpi: str, exe: Path, arm: str, tmp: Path, n: list[int], batches: int = 9) -> tuple[float, float | None]:
    """One run of one arm: (messages/s, tool memory per rank in bytes or None)."""
    scale = "0.01" if arm == "smaps" else "1"
    argv = overhead.launcher(mpi, "core") + [str(exe), str(batches), scale]  # one rank per core
    if arm == "plain":
        out = run(argv)
        tool = None
    else:
        n[0] += 1
        d = tmp / f"{mpi}-r{n[0]}"
        mode = "profile" if arm == "profile" else "memory"
        cmd = [str(MPILENS), "run", "-o", str(d), "--mode", mode]
        if arm in ("fast", "smaps"):
            cmd += ["--set", f"MPILENS_MEMORY_METHOD={arm}"]
        out = run(cmd + ["--"] + argv)
        tool = memory.load(d).peak("tool")["mean"] if mode == "memory" else None
    m = MR_RE.search(out)
    if m is None:
        raise RuntimeError(f"no msgrate line in:\n{out}")
    return float(m.group(3)), tool


def part_rate(mpi: str, rounds: int, tmp: Path) -> dict:
    exe = overhead.compile_program(mpi, "msgrate")
    arms = ["plain", "fast", "profile"]
    rates: dict[str, list[float]] = {a: [] for a in arms + ["smaps"]}
    ratios, tools, n = [], [], [0]
    for i in range(rounds):
        order = arms[i % 3:] + arms[: i % 3]
        got = {}
        for a in order:
            got[a], tool = msgrate(mpi, exe, a, tmp, n)
            rates[a].append(got[a])
            if tool is not None:
                tools.append(tool)
        ratios.append(got["fast"] / got["plain"])
        print(f"  {mpi} round {i + 1}/{rounds}: " + ", ".join(f"{a} {got[a]:,.0f}/s" for a in arms), flush=True)
    for _ in range(max(2, rounds // 4)):
        r, tool = msgrate(mpi, exe, "smaps", tmp, n, batches=5)
        rates["smaps"].append(r)
        tools.append(tool)
        print(f"  {mpi} smaps: {r:,.0f}/s", flush=True)
    med = {a: statistics.median(v) for a, v in rates.items()}
    return {"rates": rates, "median": med, "ratio_fast_median": statistics.median(ratios),
            "ratio_fast_min": min(ratios), "ratio_fast_max": max(ratios),
            "ratio_smaps": med["smaps"] / med["plain"], "ratio_profile": med["profile"] / med["plain"],
            "tool_mib": statistics.median(tools) / MiB}


def part_agree(mpi: str, reps: int, tmp: Path) -> list[dict]:
    rows = []
    k = [0]
    for prog, args in (("mem_trivial", []), ("mem_alltoall", ["40"])):
        exe = ROOT / "build" / mpi / "examples" / prog
        for np_ in (1, 2, 4, 8):
            peaks: dict[str, list[float]] = {"fast": [], "smaps": [], "same": []}
            stds: dict[str, list[float]] = {"fast": [], "smaps": []}
            for _ in range(reps):
                for method in ("fast", "smaps"):
                    k[0] += 1
                    d = tmp / f"{mpi}-a{k[0]}"
                    run([str(MPILENS), "run", "-o", str(d), "--mode", "memory", "--set",
                         f"MPILENS_MEMORY_METHOD={method}", "--"] + launcher(mpi, np_) + [str(exe), *args])
                    p = memory.load(d).peak("mpi")
                    peaks[method].append(p["mean"])
                    stds[method].append(p["std"])
                    if method == "smaps":
                        peaks["same"].append(memory.load(d, method="fast").peak("mpi")["mean"])
            f, s = statistics.median(peaks["fast"]), statistics.median(peaks["smaps"])
            same = statistics.median(a / b for a, b in zip(peaks["same"], peaks["smaps"]))
            row = {"program": prog.removeprefix("mem_"), "ranks": np_, "fast_mib": f / MiB, "smaps_mib": s / MiB,
                   "fast_std_mib": statistics.median(stds["fast"]) / MiB,
                   "smaps_std_mib": statistics.median(stds["smaps"]) / MiB,
                   "ratio": f / s, "ratio_same_run": same,
                   "fast_runs_mib": [x / MiB for x in peaks["fast"]], "smaps_runs_mib": [x / MiB for x in peaks["smaps"]]}
            rows.append(row)
            print(f"  {mpi} {row['program']:<8} {np_} ranks: fast {row['fast_mib']:.2f} MiB, smaps "
                  f"{row['smaps_mib']:.2f} MiB, ratio {row['ratio']:.3f} (same run {same:.3f})", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="interleaved message-rate rounds per MPI")
    ap.add_argument("--reps", type=int, default=3, help="runs of each method per workload and size")
    ap.add_argument("--mpi", default="openmpi,mpich")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--rate-only", action="store_true", help="only the message-rate part")
    a = ap.parse_args()
    result = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "mpis": {}}
    with tempfile.TemporaryDirectory(prefix="mpilens-bench-mem-") as t:
        tmp = Path(t)
        for mpi in a.mpi.split(","):
            print(f"{mpi}: message rate", flush=True)
            rate = part_rate(mpi, a.rounds, tmp)
            agree = []
            if not a.rate_only:
                print(f"{mpi}: fast vs smaps", flush=True)
                agree = part_agree(mpi, a.reps, tmp)
            result["mpis"][mpi] = {"rate": rate, "agree": agree}
    for mpi, r in result["mpis"].items():
        q = r["rate"]
        m = q["median"]
        print(f"\n### {overhead.MPI_NAMES[mpi]}: small-message rate (8 B, 2 ranks), {a.rounds} interleaved rounds\n")
        print("| run | median messages/s | vs plain |\n|---|---:|---:|")
        print(f"| plain | {m['plain']:,.0f} | 1 |")
        print(f"| memory mode, fast | {m['fast']:,.0f} | {q['ratio_fast_median']:.3f} "
              f"(rounds {q['ratio_fast_min']:.3f}-{q['ratio_fast_max']:.3f}) |")
        print(f"| profile mode only | {m['profile']:,.0f} | {q['ratio_profile']:.3f} |")
        print(f"| memory mode, smaps (memnesia) | {m['smaps']:,.0f} | {q['ratio_smaps']:.5f} |")
        print(f"\nTool memory per rank (its mappings and heap, PSS): {q['tool_mib']:.1f} MiB\n")
        if not r["agree"]:
            continue
        print(f"\n### {overhead.MPI_NAMES[mpi]}: peak MPI memory per process (PSS, MiB, median of {a.reps} runs)\n")
        print("| workload | ranks | fast (mean ± std) | smaps (mean ± std) | fast / smaps | same run |\n"
              "|---|---:|---:|---:|---:|---:|")
        for row in r["agree"]:
            print(f"| {row['program']} | {row['ranks']} | {row['fast_mib']:.2f} ± {row['fast_std_mib']:.2f} | "
                  f"{row['smaps_mib']:.2f} ± {row['smaps_std_mib']:.2f} | {row['ratio']:.3f} | "
                  f"{row['ratio_same_run']:.3f} |")
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
