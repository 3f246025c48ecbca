#!/usr/bin/env python3
"""Overhead of the mpilens runtime (profile mode, or --mode trace) on point-to-point latency and message rate.

For each MPI (Open MPI, MPICH) this script

1. compiles bench/pingpong.c and bench/msgrate.c with that MPI's mpicc into build/bench/<mpi>/;
2. runs interleaved A/B pairs: A is the plain program, B the same program with the matching
   runtime (build/lib/libmpilens-<mpi>.so, copied once into a temporary directory so that a
   rebuild in the same checkout cannot change it mid-benchmark) preloaded and a fresh
   MPILENS_OUTPUT directory. Within a pair the two runs are back to back; which one goes first
   alternates from pair to pair, so drift of the machine's load hits both sides alike;
3. takes, from every run, the median over its timed batches (printed by the C programs), forms
   the per-pair ratio with/without and reports per metric: the median of the A runs, the median
   of the B runs, the median of the per-pair ratios with a bootstrap 95 % confidence interval and
   the range of the pair ratios, as one markdown table per MPI.

The B runs are checked: each must leave a profile.json whose MPI_Send (ping-pong) or MPI_Isend
(message rate) call count is non-zero, otherwise the run did not measure anything and the
benchmark stops. Every temporary directory is removed at the end.

With --mode trace the B runs also write a trace; the table then adds, per run, the trace's bytes per
event and the events written per second of the run (all ranks).

Usage: .venv/bin/python bench/overhead.py [--reps N] [--quick] [--mpi openmpi,mpich] [--mode profile|trace]
       [--bind core|none] [--lib-dir DIR] [--json FILE]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PROGRAMS = ("pingpong", "msgrate")
SIZES = (8, 1024, 65536)
# Debian's two MPIs, and the test matrix's (scripts/mpis.toml: `make mpis` installs them)
MATRIX = {k: v for k, v in tomllib.loads((ROOT / "scripts" / "mpis.toml").read_text()).items() if k != "common"}
MPI_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH", **{k: v["title"] for k, v in MATRIX.items()}}


def family(mpi: str) -> str:
    """The runtime that serves an MPI: openmpi, mpich or abi."""
    return MATRIX[mpi]["family"] if mpi in MATRIX else mpi


def matrix_prefix(mpi: str) -> Path:
    prefix = ROOT / "build" / "mpis" / MATRIX[mpi].get("installation", mpi)
    if not (prefix / ".installed").exists():
        raise BenchError(f"{mpi} is not installed under {prefix}: run `make mpis`")
    return prefix
MODES = ("profile", "trace")


def targets(mode: str, settings: dict[str, str]) -> tuple[float, float] | None:
    """The current targets, (8 B hop, message rate) with / without, of a run's mode and timing; None
    for a setting no target names. They are the per-message hot path's (bench/RESULTS.md): profile
    mode timing every call hop <= 1.08 and rate >= 0.85, timing 1 call in 64 (MPILENS_TIME_SAMPLE=64)
    <= 1.03 and >= 0.90; trace mode <= 1.15 and >= 0.60. They replace the first ones (profile <= 1.05
    and >= 0.95, trace <= 1.20); 0.95 of the rate stays the stretch goal timing every call."""
    if mode == "trace":
        return 1.15, 0.60
    sample = settings.get("MPILENS_TIME_SAMPLE", "1").strip()
    return {"1": (1.08, 0.85), "64": (1.03, 0.90)}.get(sample)

PP_RE = re.compile(r"^pingpong bytes=(\d+) median_us=([\d.]+)", re.M)
MR_RE = re.compile(r"^msgrate bytes=(\d+) window=(\d+) median_msgs_per_s=([\d.]+)", re.M)


class BenchError(RuntimeError):
    pass


@dataclass
class Series:
    """One metric of one MPI: the per-run medians of the plain (A) and preloaded (B) runs."""

    name: str
    unit: str
    higher_is_better: bool
    plain: list[float] = field(default_factory=list)
    tool: list[float] = field(default_factory=list)

    def ratios(self) -> list[float]:
        return [b / a for a, b in zip(self.plain, self.tool)]


def named_dirs(items: list[str], flag: str) -> dict[str, Path]:
    """--flag NAME=DIR options as {NAME: DIR}."""
    out = {}
    for item in items:
        name, sep, d = item.partition("=")
        if not sep:
            raise BenchError(f"{flag} wants NAME=DIR, not {item!r}")
        out[name] = Path(d).resolve()
    return out


def copy_runtimes(mpi: str, libs: dict[str, Path], tmp: Path) -> dict[str, Path]:
    """Each named build's libmpilens-<mpi>.so copied into tmp/NAME/, so that a rebuild during the
    benchmark cannot change what it measures."""
    copies = {}
    for name, d in libs.items():
        src = d / f"libmpilens-{family(mpi)}.so"
        if not src.is_file():
            raise BenchError(f"{src} is missing")
        (tmp / name).mkdir()
        copies[name] = tmp / name / src.name
        shutil.copy2(src, copies[name])
    return copies


def parse_settings(text: str) -> dict[str, str]:
    """One --set of a comparison: MPILENS_K=V[,MPILENS_K=V], or - for none."""
    if text == "-":
        return {}
    out = {}
    for item in text.split(","):
        k, sep, v = item.partition("=")
        if not sep or not k.startswith("MPILENS_"):
            raise BenchError(f"--set wants MPILENS_K=V[,MPILENS_K=V] or -, not {text!r}")
        out[k] = v
    return out


def add_comparison_args(p: argparse.ArgumentParser, lib_help: str, lib_required: bool) -> None:
    """The options of a comparison of runtime builds (versus.py, paired.py): --lib NAME=DIR
    (repeatable), --set (repeatable), --mode, --mpi, --json."""
    p.add_argument("--lib", action="append", required=lib_required, help=lib_help)
    p.add_argument("--set", action="append", dest="sets", help="MPILENS_K=V[,...] or - (default: -)")
    p.add_argument("--mode", default="profile")
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--json", type=Path)


def run_comparison(script: str, args: argparse.Namespace, default_libs: list[str],
                   bench: Callable[[str, dict[str, Path], list[str], Path], dict], table: Callable[[dict], str]) -> int:
    """Run bench(mpi, the --lib builds, the --set settings, its own temporary directory) for each MPI
    of --mpi, print table(result) as each ends, write the results to --json; the exit status (1 and
    one message on a BenchError)."""
    sets = args.sets or ["-"]
    results = []
    try:
        libs = named_dirs(args.lib or default_libs, "--lib")
        with tempfile.TemporaryDirectory(prefix=f"mpilens-{script}-") as tmp:
            for mpi in args.mpi.split(","):
                sub = Path(tmp) / mpi
                sub.mkdir()
                results.append(bench(mpi, libs, sets, sub))
                print(table(results[-1]) + "\n", flush=True)
    except BenchError as e:
        print(f"{script}.py: {e}", file=sys.stderr)
        return 1
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def base_env(mpi: str | None = None) -> dict[str, str]:
    """The environment of a run; for an MPI of the matrix, with its bin/ first on PATH and its own
    settings (scripts/mpis.toml)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPILENS_") and k != "LD_PRELOAD"}
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env["LC_ALL"] = "C"
    if mpi in MATRIX:
        prefix = matrix_prefix(mpi)
        env.update({k: v.replace("{prefix}", str(prefix)) for k, v in MATRIX[mpi].get("env", {}).items()})
        env["PATH"] = f"{prefix / 'bin'}:{env.get('PATH', '')}"
    return env


def mpi_cc(mpi: str) -> str:
    """The MPI's C compiler wrapper."""
    if mpi in MATRIX:
        return MATRIX[mpi].get("cc", str(matrix_prefix(mpi) / "bin" / "mpicc")).replace(
            "{mpis}", str(ROOT / "build" / "mpis"))
    cc = shutil.which(f"mpicc.{mpi}")
    if cc is None:
        raise BenchError(f"mpicc.{mpi} not found: `make deps` installs the MPI packages")
    return cc


def compile_program(mpi: str, prog: str, flags: tuple[str, ...] = (), name: str | None = None) -> Path:
    """Compile bench/<prog>.c with the MPI's compiler wrapper into build/bench/<mpi>/<name or prog>,
    with extra flags (a preloadable shim: -shared -fPIC)."""
    cc = mpi_cc(mpi)
    out = ROOT / "build" / "bench" / mpi
    out.mkdir(parents=True, exist_ok=True)
    src, exe = BENCH / f"{prog}.c", out / (name or prog)
    # -Wno-stringop-overflow: GCC's false positive on MPICH's MPI_STATUSES_IGNORE
    cmd = [cc, "-O2", "-g", "-std=c11", "-Wall", "-Wno-stringop-overflow", *flags, "-o", str(exe), str(src)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=base_env(mpi))
    if r.returncode != 0:
        raise BenchError(f"compiling {src.name} with {cc} failed:\n{r.stderr}")
    return exe


def compile_programs(mpi: str) -> Path:
    for prog in PROGRAMS:
        exe = compile_program(mpi, prog)
    return exe.parent


def launcher(mpi: str, bind: str) -> list[str]:
    if mpi in MATRIX:
        argv = [a.replace("{np}", "2") for a in MATRIX[mpi]["launcher"]]
        argv[0] = str(matrix_prefix(mpi) / "bin" / argv[0])
        if family(mpi) == "openmpi" and (os.cpu_count() or 1) >= 2:
            argv = [a for a in argv if a not in ("--oversubscribe",)]
            i = argv.index("--bind-to")
            argv[i + 1] = bind
        return argv
    if mpi == "openmpi":
        cmd = ["mpirun.openmpi", "-np", "2", "--bind-to", bind]
        if (os.cpu_count() or 1) < 2:
            cmd[3:5] = ["--bind-to", "none", "--oversubscribe"]
        return cmd
    return ["mpirun.mpich", "-np", "2", "-bind-to", bind]


def env_args(mpi: str, pairs: list[tuple[str, str]]) -> list[str]:
    """The launcher's options that set each NAME=VALUE in the ranks' environment."""
    return [x for k, v in pairs for x in (["-x", f"{k}={v}"] if family(mpi) == "openmpi" else ["-genv", k, v])]


def tool_env_args(mpi: str, lib: Path, outdir: Path, mode: str, settings: dict[str, str]) -> list[str]:
    preload = str(lib)
    if "memory" in mode.split(","):  # memory mode's interposer, copied next to the runtime
        preload = f"{lib.parent / 'libmpilens-memory.so'}:{preload}"
    return env_args(mpi, [("LD_PRELOAD", preload), ("MPILENS_OUTPUT", str(outdir)), ("MPILENS_MODE", mode),
                          *settings.items()])


def run_once(mpi: str, prog: str, exe_dir: Path, prog_args: list[str], bind: str, lib: Path | None,
             tmp: Path, counter: list[int], timeout: float, mode: str = "profile",
             trace_stats: list | None = None, settings: dict[str, str] | None = None) -> tuple[dict[int, float], str | None]:
    """One mpirun. Returns {size: median} (msgrate: {8: msgs/s}) and, for a preloaded run, the
    MPI library version string recorded in meta.json. In trace mode, appends (bytes, events,
    seconds of the run) of the trace to trace_stats. settings: more MPILENS_* of a preloaded run."""
    cmd = launcher(mpi, bind)
    outdir = None
    if lib is not None:
        counter[0] += 1
        outdir = tmp / f"run-{counter[0]:04d}"
        cmd += tool_env_args(mpi, lib, outdir, mode, settings or {})
    cmd += [str(exe_dir / prog), *prog_args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=base_env(mpi), timeout=timeout, cwd=tmp)
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout:.0f} s: {' '.join(cmd)}") from None
    if r.returncode != 0:
        raise BenchError(f"failed (exit {r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    if prog == "pingpong":
        values = {int(b): float(v) for b, v in PP_RE.findall(r.stdout)}
        if sorted(values) != list(SIZES):
            raise BenchError(f"unexpected output of {' '.join(cmd)}:\n{r.stdout}\n{r.stderr}")
    else:
        m = MR_RE.search(r.stdout)
        if m is None:
            raise BenchError(f"unexpected output of {' '.join(cmd)}:\n{r.stdout}\n{r.stderr}")
        values = {int(m.group(1)): float(m.group(3))}
    version = None
    if outdir is not None:
        version = check_profile(outdir, prog, cmd)
        if mode == "trace" and trace_stats is not None:
            trace_stats.append(trace_size(outdir))
        shutil.rmtree(outdir, ignore_errors=True)
    return values, version


def check_profile(outdir: Path, prog: str, cmd: list[str]) -> str | None:
    prof = outdir / "profile.json"
    try:
        data = json.loads(prof.read_text())
    except (OSError, ValueError) as e:
        raise BenchError(f"the preloaded run wrote no readable {prof} ({e}): {' '.join(cmd)}") from e
    fn = "MPI_Send" if prog == "pingpong" else "MPI_Isend"
    calls = sum(data.get("functions", {}).get(fn, {}).get("calls", [0]))
    if calls <= 0:
        raise BenchError(f"{prof} counts no {fn} call: the runtime did not measure {' '.join(cmd)}")
    try:
        meta = json.loads((outdir / "meta.json").read_text())
        v = (meta.get("mpi") or {}).get("library")
        return " ".join(str(v).strip().splitlines()[0].split(",")[0].split()) if v else None
    except (OSError, ValueError):
        return None


def trace_size(outdir: Path) -> tuple[int, int, float, float | None]:
    """(bytes on disk, events, wall seconds of the slowest rank, CPU seconds of the ranks' trace
    writer threads or None when a rank did not record it) of a traced run."""
    from mpilens.trace import reader

    files = reader.trace_files(outdir)
    if not files:
        raise BenchError(f"trace mode wrote no trace into {outdir}")
    nbytes = sum(f.stat().st_size for f in files)
    events, writer_ns = 0, 0
    for r in reader.read_all(outdir):
        events += len(r.events)
        cpu = (r.trailer or {}).get("writer_cpu_ns")
        writer_ns = None if cpu is None or writer_ns is None else writer_ns + cpu
    wall = max(r["wall_time_s"] for r in json.loads((outdir / "profile.json").read_text())["ranks"])
    return nbytes, events, wall, None if writer_ns is None else writer_ns * 1e-9


def bootstrap_median_ci(xs: list[float], n: int = 4000, seed: int = 1) -> tuple[float, float]:
    if len(xs) < 2:
        return xs[0], xs[0]
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def fmt_value(v: float, unit: str) -> str:
    if unit == "us":
        return f"{v:.3f} µs"
    return f"{v / 1e6:.2f} M msg/s"


def fmt_ratio(r: float) -> str:
    return f"{r:.3f} ({(r - 1) * 100:+.1f} %)"


def table(mpi: str, series: list[Series], header: str, mode: str = "profile",
          trace_stats: list | None = None, settings: dict[str, str] | None = None) -> tuple[str, dict]:
    lines = [header, "",
             "| metric | without | with mpilens | added | with/without (median of pairs) "
             "| 95 % bootstrap CI | range of pairs |",
             "|---|---:|---:|---:|---:|---|---|"]
    summary: dict = {}
    for s in series:
        a, b, rs = statistics.median(s.plain), statistics.median(s.tool), s.ratios()
        r = statistics.median(rs)
        lo, hi = bootstrap_median_ci(rs)
        if s.unit == "us":
            added = f"{statistics.median([y - x for x, y in zip(s.plain, s.tool)]) * 1000:+.0f} ns"
        else:
            added = f"{(r - 1) * 100:+.1f} %"
        lines.append(f"| {s.name} | {fmt_value(a, s.unit)} | {fmt_value(b, s.unit)} | {added} | "
                     f"**{fmt_ratio(r)}** | {lo:.3f} – {hi:.3f} | {min(rs):.3f} – {max(rs):.3f} |")
        summary[s.name] = {"without": a, "with": b, "ratio_median": r, "ratio_ci95": [lo, hi],
                           "ratio_min": min(rs), "ratio_max": max(rs), "unit": s.unit,
                           "plain_runs": s.plain, "tool_runs": s.tool}
    lat8 = summary["latency 8 B"]["ratio_median"]
    rate = summary["msg rate 8 B"]["ratio_median"]
    settings = settings or {}
    target = targets(mode, settings)
    timing = "" if mode == "trace" else (
        f", MPILENS_TIME_SAMPLE={settings['MPILENS_TIME_SAMPLE']}" if "MPILENS_TIME_SAMPLE" in settings else ", every call timed")
    if target is None:
        lines += ["", f"No target for {mode} mode{timing}: 8 B latency with/without {lat8:.3f}, "
                      f"message rate with/without {rate:.3f}."]
        summary["target"] = None
    else:
        target_lat, target_rate = target
        ok_lat, ok_rate = lat8 <= target_lat, rate >= target_rate
        lines += ["",
                  f"Target ({mode} mode{timing}): 8 B latency with/without <= {target_lat:.2f}: "
                  f"{lat8:.3f} -> **{'met' if ok_lat else 'MISSED'}**; message rate with/without "
                  f">= {target_rate:.2f}: {rate:.3f} -> **{'met' if ok_rate else 'MISSED'}**"]
        summary["target"] = {"latency_8B_max": target_lat, "msgrate_min": target_rate,
                             "latency_8B_ok": ok_lat, "msgrate_ok": ok_rate}
    if trace_stats:
        per_event = statistics.median(b / e for b, e, _, _ in trace_stats if e)
        rate_w = statistics.median(e / w for _, e, w, _ in trace_stats if w > 0)
        lines += ["", f"Trace written (median over the {len(trace_stats)} traced runs): "
                      f"{per_event:.1f} bytes per event on disk (headers and block framing included), "
                      f"{rate_w / 1e6:.2f} M events/s of run time (both ranks together)."]
        summary["trace"] = {"bytes_per_event": per_event, "events_per_s": rate_w, "runs": trace_stats}
        cpu = [(c, e, w) for _, e, w, c in trace_stats if c is not None and e]
        if cpu:
            ns_per_event = statistics.median(c / e * 1e9 for c, e, _ in cpu)
            share = statistics.median(c / w for c, _, w in cpu if w > 0)
            lines.append(f"Writer threads' CPU time: {ns_per_event:.1f} ns per event, {share * 100:.1f} % of one "
                         "core over the run (all ranks together, median over the runs).")
            summary["trace"]["writer_ns_per_event"] = ns_per_event
    return "\n".join(lines), summary


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bench_mpi(mpi: str, args: argparse.Namespace, tmp: Path) -> tuple[str, dict]:
    lib_src = args.lib_dir / f"libmpilens-{mpi}.so"
    if not lib_src.is_file():
        raise BenchError(f"{lib_src} is missing: build the runtime first (`make runtime`)")
    for tool in (f"mpirun.{mpi}",):
        if shutil.which(tool) is None:
            raise BenchError(f"{tool} not found: `make deps` installs the MPI packages")
    exe_dir = compile_programs(mpi)
    lib = tmp / lib_src.name
    shutil.copy2(lib_src, lib)  # snapshot: others may rebuild build/lib during the benchmark
    if "memory" in args.mode.split(","):
        shutil.copy2(args.lib_dir / "libmpilens-memory.so", tmp / "libmpilens-memory.so")
    prog_args = [str(args.batches), str(args.scale)]
    lat = {s: Series(f"latency {s} B" if s < 1024 else f"latency {s // 1024} KiB", "us", False)
           for s in SIZES}
    rate = Series("msg rate 8 B", "msgs/s", True)
    counter = [0]
    version = None
    trace_stats: list = []
    t_start = time.monotonic()
    for rep in range(args.reps):
        tool_first = rep % 2 == 1
        for prog in PROGRAMS:
            results = {}
            for with_tool in ((True, False) if tool_first else (False, True)):
                values, v = run_once(mpi, prog, exe_dir, prog_args, args.bind, lib if with_tool else None,
                                     tmp, counter, args.timeout, args.mode, trace_stats, args.settings)
                version = version or v
                results[with_tool] = values
            if prog == "pingpong":
                for s in SIZES:
                    lat[s].plain.append(results[False][s])
                    lat[s].tool.append(results[True][s])
            else:
                rate.plain.append(results[False][8])
                rate.tool.append(results[True][8])
        log(f"  {mpi}: pair {rep + 1}/{args.reps} done ({'B' if tool_first else 'A'} first), "
            f"8 B {lat[8].plain[-1]:.3f}/{lat[8].tool[-1]:.3f} µs, "
            f"rate {rate.plain[-1] / 1e6:.2f}/{rate.tool[-1] / 1e6:.2f} M/s "
            f"[{time.monotonic() - t_start:.0f} s]")
    launch = " ".join(launcher(mpi, args.bind))
    header = (f"### {MPI_NAMES[mpi]}" + (f" ({version})" if version else "") +
              f": `{launch}`, {args.reps} interleaved pairs, {args.batches} batches per run, "
              f"MPILENS_MODE={args.mode}" + "".join(f", {k}={v}" for k, v in args.settings.items()))
    text, summary = table(mpi, [*lat.values(), rate], header, args.mode, trace_stats, args.settings)
    summary["meta"] = {"launcher": launch, "mpi_version": version, "library": str(lib_src),
                       "library_sha256": sha256(lib), "reps": args.reps, "batches": args.batches,
                       "scale": args.scale, "seconds": time.monotonic() - t_start}
    return text, summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=30, help="interleaved A/B pairs per MPI (default 30)")
    p.add_argument("--batches", type=int, default=15, help="timed batches per run (default 15)")
    p.add_argument("--scale", type=float, default=1.0, help="multiplies the iterations per batch")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 5 pairs, 7 short batches per run (under a minute; numbers are rough)")
    p.add_argument("--mpi", default="openmpi,mpich", help="comma separated: openmpi, mpich")
    p.add_argument("--mode", choices=MODES, default="profile", help="MPILENS_MODE of the runs with mpilens")
    p.add_argument("--bind", choices=("core", "none"), default="core",
                   help="process binding of both launchers (default core: one rank per core)")
    p.add_argument("--timeout", type=float, default=300, help="seconds allowed for one mpirun")
    p.add_argument("--lib-dir", type=Path, default=ROOT / "build" / "lib",
                   help="where libmpilens-<mpi>.so is (default build/lib)")
    p.add_argument("--json", type=Path, help="also write every per-run median and the summary here")
    p.add_argument("--set", action="append", default=[], metavar="MPILENS_K=V",
                   help="another setting of the runs with mpilens, e.g. MPILENS_TIME_SAMPLE=64")
    args = p.parse_args(argv)
    args.settings = {}
    for item in args.set:
        k, sep, v = item.partition("=")
        if not sep or not k.startswith("MPILENS_"):
            p.error(f"--set {item}: expected MPILENS_NAME=VALUE")
        args.settings[k] = v
    if args.quick:
        args.reps, args.batches, args.scale = min(args.reps, 5), 7, 0.25
    if args.reps < 1 or args.batches < 1 or args.scale <= 0:
        p.error("--reps, --batches and --scale must be positive")
    mpis = [m.strip() for m in args.mpi.split(",") if m.strip()]
    bad = [m for m in mpis if m not in MPI_NAMES]
    if bad:
        p.error(f"unknown MPI {', '.join(bad)} (choose from openmpi, mpich)")

    tmp = Path(tempfile.mkdtemp(prefix="mpilens-bench-"))
    out: dict = {"argv": sys.argv[1:], "date": time.strftime("%Y-%m-%d %H:%M:%S"), "mpis": {}}
    texts = []
    try:
        for mpi in mpis:
            log(f"{MPI_NAMES[mpi]}: compiling and running {args.reps} A/B pairs ...")
            text, summary = bench_mpi(mpi, args, tmp)
            texts.append(text)
            out["mpis"][mpi] = summary
    except BenchError as e:
        log(f"overhead.py: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n\n".join(texts))
    if args.quick:
        print("\n(--quick: few, short runs; the ratios are only indicative)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        log(f"raw results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
