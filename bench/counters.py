#!/usr/bin/env python3
"""Cost of the counters mode on the shortest MPI operations (8-byte ping-pong latency, 8-byte
message rate; bench/pingpong.c and bench/msgrate.c, two ranks, shared memory).

Four configurations run interleaved, in a fresh random order in every round, so that drift of the
machine's load hits all alike:
  base      profile mode, runtime built from a commit without the counters code (--base-commit)
  off       profile mode, this runtime: counters compiled in, disabled
  on        counters mode, default groups (all but the opt-in unexpected-message probe)
  on+unexp  counters mode, every group including the MPI_Iprobe per posted receive
From every run the median over its timed batches is taken; per round the ratios off/base, on/off
and on+unexp/off are formed; the table gives the medians of the runs and the median ratio with
the range over the rounds. The snapshot thread's own time (sum over its wake-ups, from
counters/rank-*.json) is reported per second of run.

Usage: .venv/bin/python bench/counters.py [--reps N] [--mpi openmpi,mpich] [--base-commit REV]
       [--batches N] [--scale X] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import overhead as ov  # noqa: E402

ROOT = ov.ROOT
CONFIGS = ("base", "off", "on", "on+unexp")
# runtime/src files that are programs of their own, not part of libmpilens (the Makefile's LIB_SRC)
NOT_IN_LIB = ("check.c", "annotate_stub.c", "mpit_list.c", "memory_interpose.c")  # not in libmpilens-<mpi>.so
ALL = "calls,bytes,sizes,eager,queue,unexpected,collectives,peers,comms,pvars"


def build_base(rev: str, tmp: Path, mpis: list[str]) -> Path:
    """Build libmpilens-<mpi>.so of commit rev (runtime only) into tmp/base/lib."""
    src = tmp / "base"
    src.mkdir()
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "runtime", "VERSION"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(src)], input=arch.stdout, check=True)
    lib = src / "lib"
    lib.mkdir()
    py = ROOT / ".venv" / "bin" / "python"
    for m in mpis:
        gen = src / "gen" / m
        subprocess.run([str(py), str(src / "runtime/gen/generate.py"), "--mpi", m, "--cc", f"mpicc.{m}", "--spec",
                        str(src / "runtime/spec"), "--out", str(gen)], check=True, capture_output=True)
        files = [str(p) for p in sorted((src / "runtime/src").glob("*.c")) if p.name not in NOT_IN_LIB]
        files += [str(gen / f) for f in ("wrappers_c.c", "wrappers_c_hot.c", "wrappers_f.c", "wrappers_f_hot.c",
                                         "ml_functions.c", "ml_config_table.c") if (gen / f).exists()]
        version = (src / "VERSION").read_text().strip()
        subprocess.run([f"mpicc.{m}", "-std=c11", "-D_GNU_SOURCE", "-O2", "-g", "-fPIC", "-fvisibility=hidden",
                        f'-DML_VERSION="{version}"', f"-I{src}/runtime/src", f"-I{src}/runtime/include", f"-I{gen}",
                        "-shared", "-o", str(lib / f"libmpilens-{m}.so"), *files, "-ldl", "-lpthread"],
                       check=True, capture_output=True)
    return lib


def run(mpi: str, prog: str, exe_dir: Path, lib: Path, mode: str, groups: str | None, tmp: Path, n: list[int],
        bind: str, timeout: float, prog_args: list[str]) -> tuple[float, float | None]:
    """One preloaded mpirun: (median metric, snapshot-thread seconds per run second or None)."""
    n[0] += 1
    out = tmp / f"run-{n[0]:04d}"
    pairs = [("LD_PRELOAD", str(lib)), ("MPILENS_OUTPUT", str(out)), ("MPILENS_MODE", mode)]
    if groups:
        pairs.append(("MPILENS_COUNTERS", groups))
    cmd = ov.launcher(mpi, bind)
    for k, v in pairs:
        cmd += ["-x", f"{k}={v}"] if mpi == "openmpi" else ["-genv", k, v]
    cmd += [str(exe_dir / prog), *prog_args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=ov.base_env(), timeout=timeout, cwd=tmp)
    if r.returncode != 0:
        raise ov.BenchError(f"failed: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    if prog == "pingpong":
        v = {int(b): float(x) for b, x in ov.PP_RE.findall(r.stdout)}[8]
    else:
        m = ov.MR_RE.search(r.stdout)
        if m is None:
            raise ov.BenchError(f"unexpected output: {r.stdout}")
        v = float(m.group(3))
    snap = None
    if mode == "counters":
        docs = [json.loads(p.read_text()) for p in sorted((out / "counters").glob("rank-*.json"))]
        prof = json.loads((out / "profile.json").read_text())
        if len(docs) != 2 or not any(d["values"][18] for d in docs):  # MPI_CALLS
            raise ov.BenchError(f"counters run measured nothing: {out}")
        snap = max(d["snapshot_seconds"] for d in docs) / max(prof["wall_time_s"], 1e-9)
    shutil.rmtree(out, ignore_errors=True)
    return v, snap


def callgrind_table(mpis: list[str], base_lib: Path, cur_lib: Path, tmp: Path) -> str:
    """Instructions per loop iteration of bench/selfloop.c on one rank under valgrind (independent of
    the machine's load): plain, base (profile), off (profile, counters compiled in), on, on+unexp."""
    import hotpath as hp

    lines = ["| MPI | loop | plain | base | off | on | on+unexp | off - base | on - off | on+unexp - off |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for m in mpis:
        exe = hp.compile_selfloop(m)
        for mode in ("send", "recv", "window"):
            n = hp.CG_ITERS[mode]
            iters = hp.cg_iterations(mode)
            res = {}
            for name, lib, mm, groups in (("plain", None, None, None), ("base", base_lib, "profile", None),
                                          ("off", cur_lib, "profile", None), ("on", cur_lib, "counters", None),
                                          ("on+unexp", cur_lib, "counters", ALL)):
                out = tmp / f"cg.{m}.{mode}.{name}"
                env_prefix = ["env"]
                if mm:
                    env_prefix.append(f"MPILENS_MODE={mm}")
                if groups:
                    env_prefix.append(f"MPILENS_COUNTERS={groups}")
                hp.run(exe, [mode, str(n)], (lib / f"libmpilens-{m}.so") if lib else None, tmp,
                       env_prefix + ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                     f"--toggle-collect=loop_{mode}"])
                res[name] = hp.cg_parse(out)[3] / iters
            lines.append(f"| {ov.MPI_NAMES[m]} | {mode} | " + " | ".join(f"{res[k]:.0f}" for k in
                         ("plain", "base", "off", "on", "on+unexp")) + f" | {res['off'] - res['base']:+.0f} | "
                         f"{res['on'] - res['off']:+.0f} | {res['on+unexp'] - res['off']:+.0f} |")
            ov.log(f"callgrind {m} {mode} done")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--base-commit", default="f8b0235", help="a commit without the counters code")
    p.add_argument("--base-lib-dir", type=Path, help="use these libmpilens-<mpi>.so as base instead of building")
    p.add_argument("--bind", default="core", choices=["core", "none"])
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--batches", type=int, default=15, help="timed batches per run (C programs)")
    p.add_argument("--scale", type=float, default=1.0, help="iterations per batch, relative")
    p.add_argument("--json", type=Path)
    p.add_argument("--callgrind", action="store_true",
                   help="instructions per call on one rank (valgrind), instead of the timed runs")
    a = p.parse_args(argv)
    mpis = a.mpi.split(",")
    out_doc: dict = {}
    with tempfile.TemporaryDirectory(prefix="mpilens-bench-") as t:
        tmp = Path(t)
        if a.base_lib_dir:
            base_lib = a.base_lib_dir
        else:
            ov.log(f"building the runtime of {a.base_commit} (base)")
            base_lib = build_base(a.base_commit, tmp, mpis)
        cur_lib = tmp / "cur"
        cur_lib.mkdir()
        for m in mpis:
            shutil.copy(ROOT / "build" / "lib" / f"libmpilens-{m}.so", cur_lib)
        if a.callgrind:
            print(callgrind_table(mpis, base_lib, cur_lib, tmp))
            return 0
        n = [0]
        for m in mpis:
            exe_dir = ov.compile_programs(m)
            res = {prog: {c: [] for c in CONFIGS} for prog in ("pingpong", "msgrate")}
            snaps: list[float] = []
            for rep in range(a.reps):
                for prog in ("pingpong", "msgrate"):
                    order = list(CONFIGS)
                    random.shuffle(order)
                    for c in order:
                        lib = (base_lib if c == "base" else cur_lib) / f"libmpilens-{m}.so"
                        mode = "counters" if c.startswith("on") else "profile"
                        groups = ALL if c == "on+unexp" else None
                        v, s = run(m, prog, exe_dir, lib, mode, groups, tmp, n, a.bind, a.timeout,
                                   [str(a.batches), str(a.scale)])
                        res[prog][c].append(v)
                        if s is not None:
                            snaps.append(s)
                ov.log(f"{m}: round {rep + 1}/{a.reps}")
            print(f"\n### {ov.MPI_NAMES[m]}: counters mode, {a.reps} interleaved rounds\n")
            print("| metric | base | off | on | on+unexp | off/base | on/off | on+unexp/off |")
            print("|---|---|---|---|---|---|---|---|")
            doc = {}
            for prog, _unit in (("pingpong", "µs"), ("msgrate", "msg/s")):
                r = res[prog]
                med = {c: statistics.median(r[c]) for c in CONFIGS}

                def ratio(x: str, y: str) -> str:
                    rr = [b / a_ for a_, b in zip(r[y], r[x])]  # noqa: B023 - called in this iteration
                    return f"{statistics.median(rr):.3f} ({min(rr):.3f}–{max(rr):.3f})"
                fmt = (lambda v: f"{v:.3f} µs") if prog == "pingpong" else (lambda v: f"{v / 1e6:.2f} M/s")
                name = "8 B ping-pong latency" if prog == "pingpong" else "8 B message rate"
                print(f"| {name} | " + " | ".join(fmt(med[c]) for c in CONFIGS) + " | "
                      + " | ".join([ratio("off", "base"), ratio("on", "off"), ratio("on+unexp", "off")]) + " |")
                doc[prog] = {c: r[c] for c in CONFIGS}
            sn = statistics.median(snaps) if snaps else 0.0
            print(f"\nSnapshot thread (500 ms period): {sn * 100:.4f} % of the run's wall time (median over runs).")
            doc["snapshot_share"] = snaps
            out_doc[m] = doc
    if a.json:
        a.json.write_text(json.dumps(out_doc, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ov.BenchError as e:
        print(f"bench/counters.py: {e}", file=sys.stderr)
        sys.exit(1)
