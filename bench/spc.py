#!/usr/bin/env python3
"""mpilens against Open MPI's own software performance counters, in the same hour.

Open MPI can count inside the library (configure --enable-spc, the counters of the research mpilens
builds on: seeds/000); Debian builds it without them. bench/ompi_spc_build.sh builds the same
Open MPI version from Debian's source package with them (build/bench/ompi-spc). This script runs the
8-byte ping-pong and message rate of bench/overhead.py, all interleaved in a fresh random order per
round:

  plain          Debian's Open MPI, nothing measuring
  spc-off        the --enable-spc build, no counter attached (what compiling them in costs)
  spc-all        the --enable-spc build, every counter attached (mpirun --mca mpi_spc_attach all)
  mpilens        Debian's Open MPI under mpilens (profile mode), every call timed
  mpilens-s64    the same with MPILENS_TIME_SAMPLE=64

Each configuration is compared with the plain run of its round (median over rounds of with /
without, bootstrap 95 % intervals). Before the rounds it checks that the counters really count:
one message-rate run of spc-all with mpi_spc_dump_enabled must report exactly the MPI_Isend calls
the program makes.

With --callgrind it also counts, for the same configurations, the instructions each adds per
iteration of bench/selfloop.c's loops on one rank (valgrind's callgrind; deterministic, unlike the
timings on a busy machine).

Usage: .venv/bin/python bench/spc.py [--rounds N] [--batches N] [--callgrind] [--json FILE]
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
import hotpath  # noqa: E402  (its callgrind reader and bench/selfloop.c)
from overhead import (  # noqa: E402
    MR_RE,
    PP_RE,
    ROOT,
    BenchError,
    base_env,
    bootstrap_median_ci,
    check_profile,
    compile_programs,
    log,
    sha256,
)

CONFIGS = ("plain", "spc-off", "spc-all", "mpilens", "mpilens-s64")
WINDOW, WARMUP_WINDOWS, WINDOWS = 64, 105, 500  # bench/msgrate.c at scale 1


def spc_prefix() -> Path:
    r = subprocess.run([str(ROOT / "bench" / "ompi_spc_build.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"bench/ompi_spc_build.sh failed:\n{r.stderr[-3000:]}")
    return Path(r.stdout.strip().splitlines()[-1])


def command(config: str, prefix: Path, lib: Path, outdir: Path, exe: Path, args: list[str]) -> list[str]:
    """The mpirun of one configuration: Debian's launcher, or the SPC build's own with its library
    first in the path (the program was built against Debian's headers of the same version)."""
    if config.startswith("spc"):
        return [str(prefix / "bin" / "mpirun"), "-np", "2", "--bind-to", "core",
                "--mca", "mpi_spc_attach", "all" if config == "spc-all" else "none",
                "-x", f"LD_LIBRARY_PATH={prefix / 'lib'}", str(exe), *args]
    cmd = ["mpirun.openmpi", "-np", "2", "--bind-to", "core"]
    if config.startswith("mpilens"):
        cmd += ["-x", f"LD_PRELOAD={lib}", "-x", f"MPILENS_OUTPUT={outdir}", "-x", "MPILENS_MODE=profile"]
        if config == "mpilens-s64":
            cmd += ["-x", "MPILENS_TIME_SAMPLE=64"]
    return cmd + [str(exe), *args]


def run(cmd: list[str], tmp: Path) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, env=base_env(), timeout=600, cwd=tmp)
    if r.returncode != 0:
        raise BenchError(f"failed (exit {r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr[-2000:]}")
    return r.stdout + r.stderr


def check_counters(prefix: Path, exe_dir: Path, tmp: Path, batches: int) -> None:
    """The counters count: spc-all's dump of one message-rate run has rank 0's MPI_Isend calls."""
    cmd = command("spc-all", prefix, Path(), tmp, exe_dir / "msgrate", [str(batches), "1"])
    cmd[1:1] = ["--mca", "mpi_spc_dump_enabled", "true"]
    out = run(cmd, tmp)
    got = re.search(r"MPI_COMM_WORLD Rank 0:(.*?)MPI_COMM_WORLD Rank 1:", out, re.S)
    isend = re.search(r"OMPI_SPC_ISEND -> (\d+)", got.group(1)) if got else None
    want = WINDOW * (WARMUP_WINDOWS + batches * WINDOWS)
    if isend is None or int(isend.group(1)) != want:
        raise BenchError(f"the SPC build did not count rank 0's {want} MPI_Isend calls:\n{out[-3000:]}")
    nonzero = len(re.findall(r"OMPI_SPC_\w+ -> ", got.group(1)))
    log(f"spc: counters on, OMPI_SPC_ISEND = {want} as expected; {nonzero} counters non-zero on rank 0")


def instructions(prefix: Path, lib: Path, tmp: Path) -> list[dict]:
    """Instructions per loop iteration of bench/selfloop.c on one rank: Debian's Open MPI plain,
    the SPC build with no counter and with all, Debian's under mpilens."""
    if shutil.which("valgrind") is None:
        raise BenchError("valgrind not found (apt-get install valgrind)")
    exe = hotpath.compile_selfloop("openmpi")
    rows = []
    for loop in ("send", "recv", "window"):
        n = hotpath.CG_ITERS[loop]
        iters = hotpath.cg_iterations(loop) * (64 if loop == "window" else 1)  # per message pair in the window loop
        got = {}
        for config in ("plain", "spc-off", "spc-all", "mpilens"):
            env = base_env()
            if config.startswith("spc"):
                env["LD_LIBRARY_PATH"] = str(prefix / "lib")
                env["OMPI_MCA_mpi_spc_attach"] = "all" if config == "spc-all" else "none"
            elif config == "mpilens":
                env.update(LD_PRELOAD=str(lib), MPILENS_OUTPUT=str(tmp / f"cg-{loop}"), MPILENS_MODE="profile")
            out = tmp / f"cg.{loop}.{config}"
            r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                f"--toggle-collect=loop_{loop}", str(exe), loop, str(n)],
                               capture_output=True, text=True, env=env, timeout=900, cwd=tmp)
            if r.returncode != 0:
                raise BenchError(f"selfloop {loop} under callgrind ({config}) failed:\n{r.stderr[-2000:]}")
            got[config] = hotpath.cg_parse(out)[3] / iters
        rows.append({"loop": loop, **got})
    return rows


def bench(rounds: int, batches: int, tmp: Path) -> dict:
    prefix = spc_prefix()
    exe_dir = compile_programs("openmpi")
    lib = tmp / "libmpilens-openmpi.so"
    shutil.copy2(ROOT / "build" / "lib" / lib.name, lib)
    check_counters(prefix, exe_dir, tmp, batches)
    got: dict[str, dict[str, list[float]]] = {c: {"lat8": [], "rate": []} for c in CONFIGS}
    rng = random.Random(7)
    n = 0
    for r in range(rounds):
        order = list(CONFIGS)
        rng.shuffle(order)
        for c in order:
            for prog in ("pingpong", "msgrate"):
                n += 1
                outdir = tmp / f"run-{n:04d}"
                cmd = command(c, prefix, lib, outdir, exe_dir / prog, [str(batches), "1"])
                out = run(cmd, tmp)
                if c.startswith("mpilens"):
                    check_profile(outdir, prog, cmd)
                    shutil.rmtree(outdir, ignore_errors=True)
                if prog == "pingpong":
                    got[c]["lat8"].append({int(b): float(v) for b, v in PP_RE.findall(out)}[8])
                else:
                    got[c]["rate"].append(float(MR_RE.search(out).group(3)))
        log(f"  round {r + 1}/{rounds}: plain 8 B {got['plain']['lat8'][-1]:.3f} µs, "
            f"rate {got['plain']['rate'][-1] / 1e6:.2f} M/s")
    rows = []
    for c in CONFIGS[1:]:
        lat = [b / a for a, b in zip(got["plain"]["lat8"], got[c]["lat8"])]
        rate = [b / a for a, b in zip(got["plain"]["rate"], got[c]["rate"])]
        rows.append({"config": c, "lat8_ratio": statistics.median(lat), "lat8_ci": bootstrap_median_ci(lat),
                     "rate_ratio": statistics.median(rate), "rate_ci": bootstrap_median_ci(rate),
                     "lat8_us": statistics.median(got[c]["lat8"]), "rate": statistics.median(got[c]["rate"])})
    # mpilens against the in-library counters directly, round by round
    versus = []
    for c in ("mpilens", "mpilens-s64"):
        lat = [b / a for a, b in zip(got["spc-all"]["lat8"], got[c]["lat8"])]
        rate = [b / a for a, b in zip(got["spc-all"]["rate"], got[c]["rate"])]
        versus.append({"config": c, "lat8_ratio": statistics.median(lat), "lat8_ci": bootstrap_median_ci(lat),
                       "rate_ratio": statistics.median(rate), "rate_ci": bootstrap_median_ci(rate)})
    return {"rounds": rounds, "batches": batches, "plain_lat8_us": statistics.median(got["plain"]["lat8"]),
            "versus_spc_all": versus,
            "plain_rate": statistics.median(got["plain"]["rate"]), "rows": rows, "runtime": sha256(lib)[:12],
            "raw": got}


def table(res: dict) -> str:
    out = [f"Open MPI 4.1.4, {res['rounds']} rounds; plain 8 B hop {res['plain_lat8_us']:.3f} µs, plain rate "
           f"{res['plain_rate'] / 1e6:.2f} M msgs/s; runtime {res['runtime']}", "",
           "| configuration | 8 B hop | with / without (95 % CI) | message rate | kept (95 % CI) |",
           "|---|---:|---|---:|---|"]
    for r in res["rows"]:
        out.append(f"| {r['config']} | {r['lat8_us']:.3f} µs | **{r['lat8_ratio']:.3f}** "
                   f"({r['lat8_ci'][0]:.3f}–{r['lat8_ci'][1]:.3f}) | {r['rate'] / 1e6:.2f} M/s | "
                   f"**{r['rate_ratio']:.3f}** ({r['rate_ci'][0]:.3f}–{r['rate_ci'][1]:.3f}) |")
    out += ["", "Against Open MPI's counters (spc-all) of the same round:", "",
            "| configuration | 8 B hop, mpilens / spc-all (95 % CI) | message rate, mpilens / spc-all (95 % CI) |",
            "|---|---|---|"]
    for r in res["versus_spc_all"]:
        out.append(f"| {r['config']} | **{r['lat8_ratio']:.3f}** ({r['lat8_ci'][0]:.3f}–{r['lat8_ci'][1]:.3f}) | "
                   f"**{r['rate_ratio']:.3f}** ({r['rate_ci'][0]:.3f}–{r['rate_ci'][1]:.3f}) |")
    return "\n".join(out)


def instruction_table(rows: list[dict]) -> str:
    out = ["Instructions per iteration of bench/selfloop.c (one rank, 8 B to self; window: per Isend + Irecv pair), "
           "and what each configuration adds to Debian's plain library:", "",
           "| loop | plain | spc-off | spc-all | mpilens |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['loop']} | {r['plain']:.0f} | " + " | ".join(
            f"+{r[c] - r['plain']:.0f}" for c in ("spc-off", "spc-all", "mpilens")) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--batches", type=int, default=15)
    p.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="mpilens-spc-") as tmp:
            res = bench(args.rounds, args.batches, Path(tmp))
            if args.callgrind:
                res["instructions"] = instructions(spc_prefix(), Path(tmp) / "libmpilens-openmpi.so", Path(tmp))
    except BenchError as e:
        print(f"spc.py: {e}", file=sys.stderr)
        return 1
    print(table(res))
    if "instructions" in res:
        print("\n" + instruction_table(res["instructions"]))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
