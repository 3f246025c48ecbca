#!/usr/bin/env python3
"""mpilens beside the tools users would pick instead, measured in one sitting: mpiP (LLNL's PMPI
profiler) and Caliper (LLNL; its MPI wrapping through GOTCHA, `CALI_CONFIG=mpi-report`), built from
their source archives in ../shared/peers (bench/peers.py build; cached under build/peers/, one build
per MPI; Caliper with --caliper, a few minutes), against the 8-byte ping-pong and the message rate
of bench/overhead.py. An unmodified program does not start Caliper by itself: a three-line
preloaded library (build/peers/.../libcalinit.so) calls cali_mpi_init() and cali_init() before main.

Each round runs, in a fresh random order, the plain programs and each tool configuration:

    mpilens          profile mode, every call timed (build/lib's runtime, copied first)
    mpilens 1/64     profile mode, MPILENS_TIME_SAMPLE=64
    mpiP -k 0        mpiP without call-site stack walks (its cheapest)
    mpiP             mpiP's default (call sites one level deep)
    mpilens + mpiP   both in one job (LD_PRELOAD=runtime:libmpiP.so, mpiP -k 0): each call measured by
                     mpilens, then passed on to mpiP (docs/tools.md)
    Caliper          CALI_CONFIG=mpi-report (with --caliper)

and compares each with the plain run of the same round (sharing the machine's drift): per
configuration, the median over rounds of (with / without) for the 8-byte hop and the message rate,
with bootstrap 95 % intervals. Every tool run is checked to have measured (mpilens: profile.json
counts the calls; mpiP: its report counts them).

With --lammps, Debian's LAMMPS instead (in.indent, bench/lammps.py's setting): its loop time plain,
under mpilens, under mpiP -k 0 and under both, interleaved the same way.

With --apps, Debian's NetPIPE (8-byte one-way time, 1 MiB throughput) and, on MPICH, the Intel MPI
Benchmarks' IMB-MPI1 PingPong (8 bytes): plain, under mpilens, mpiP -k 0 and both, interleaved.

Usage: .venv/bin/python bench/peers.py [--rounds N] [--mpi openmpi,mpich] [--caliper] [--json FILE]
       .venv/bin/python bench/peers.py --lammps [--rounds N]
       .venv/bin/python bench/peers.py --apps [--rounds N] [--mpi openmpi,mpich]
       .venv/bin/python bench/peers.py build [--mpi openmpi] [--caliper]   (prints the libraries' paths)
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
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
from overhead import (  # noqa: E402
    MR_RE,
    PP_RE,
    ROOT,
    BenchError,
    base_env,
    bootstrap_median_ci,
    compile_programs,
    copy_runtimes,
    env_args,
    launcher,
    log,
    tool_env_args,
)

PEERS = ROOT.parent / "shared" / "peers"
MPIP_ARCHIVE = "mpiP-*.tar.gz"


@contextlib.contextmanager
def _building(home: Path):
    """Hold the lock of one peer build (build/peers/NAME.lock): two test workers or benchmarks that
    want the same build wait for the one that makes it, then find it made."""
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _unpacked(archive: Path, into: Path) -> Path:
    """The source tree of a peer's archive, unpacked into a directory: its one top folder."""
    subprocess.run(["tar", "xzf", str(archive), "-C", str(into)], check=True)
    (src,) = [p for p in into.iterdir() if p.is_dir()]
    return src


def build_mpip(mpi: str = "openmpi") -> Path:
    """libmpiP.so built with the MPI's compiler wrapper, once per archive and MPI (build/peers/), as
    ../shared/peers/README.md says: no libunwind, no bfd (call sites as addresses)."""
    archives = sorted(PEERS.glob(MPIP_ARCHIVE))
    if not archives:
        raise BenchError(f"no {MPIP_ARCHIVE} in {PEERS}")
    archive = archives[-1]
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:12]
    home = ROOT / "build" / "peers" / f"mpiP-{digest}-{mpi}"
    lib = home / "libmpiP.so"
    if lib.is_file():
        return lib
    with _building(home):
        if not lib.is_file():
            _make_mpip(archive, home, mpi)
    return lib


def _make_mpip(archive: Path, home: Path, mpi: str) -> None:
    lib = home / "libmpiP.so"
    with tempfile.TemporaryDirectory(dir=ROOT / "build") as tmp:
        src = _unpacked(archive, Path(tmp))
        env = dict(base_env(mpi), CC=f"mpicc.{mpi}", F77=f"mpif77.{mpi}", LOGNAME="mpilens")
        for cmd in (["./configure", "--disable-libunwind", "--disable-bfd"], ["make", "shared"]):
            p = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise BenchError(f"building mpiP: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / "libmpiP.so", home / "libmpiP.so.tmp")
        (home / "libmpiP.so.tmp").replace(lib)


def build_caliper(mpi: str = "openmpi") -> Path:
    """Caliper built with the MPI's wrappers (cmake, as ../shared/peers/README.md says), installed under
    build/peers/, and the preloaded library that starts it in an unmodified program; returns the
    latter."""
    archives = sorted(PEERS.glob("Caliper-*.tar.gz"))
    if not archives:
        raise BenchError(f"no Caliper-*.tar.gz in {PEERS}")
    digest = hashlib.sha256(archives[-1].read_bytes()).hexdigest()[:12]
    home = ROOT / "build" / "peers" / f"caliper-{digest}-{mpi}"
    init = home / "libcalinit.so"
    if init.is_file():
        return init
    with _building(home):
        if not init.is_file():
            _make_caliper(archives[-1], home, mpi)
    return init


def _make_caliper(archive: Path, home: Path, mpi: str) -> None:
    init = home / "libcalinit.so"
    with tempfile.TemporaryDirectory(dir=ROOT / "build") as tmp:
        src = _unpacked(archive, Path(tmp))
        (src / "build").mkdir()
        cxx = "mpicxx.openmpi" if mpi == "openmpi" else "mpicxx.mpich"
        for cmd in (["cmake", "-DWITH_MPI=On", f"-DMPI_C_COMPILER=mpicc.{mpi}", f"-DMPI_CXX_COMPILER={cxx}",
                     "-DBUILD_TESTING=Off", f"-DCMAKE_INSTALL_PREFIX={home}", ".."], ["make", "-j2"], ["make", "install"]):
            p = subprocess.run(cmd, cwd=src / "build", env=base_env(mpi), capture_output=True, text=True)
            if p.returncode != 0:
                raise BenchError(f"building Caliper: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    c = home / "calinit.c"
    c.write_text("void cali_mpi_init(void);\nvoid cali_init(void);\n"
                 "__attribute__((constructor)) static void start(void) { cali_mpi_init(); cali_init(); }\n")
    lib = home / "lib"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(init), str(c), f"-L{lib}", f"-Wl,-rpath,{lib}", "-lcaliper"],
                   check=True)


def build_darshan(mpi: str = "openmpi") -> Path:
    """Darshan's runtime built with the MPI's compiler wrapper (as ../shared/peers/README.md says:
    logs to $DARSHAN_LOGPATH, no job id) and its utilities (darshan-parser, an independent reader of
    its logs), installed under build/peers/; returns the prefix (lib/libdarshan.so, bin/darshan-parser)."""
    archives = sorted(PEERS.glob("darshan-*.tar.gz"))
    if not archives:
        raise BenchError(f"no darshan-*.tar.gz in {PEERS}")
    digest = hashlib.sha256(archives[-1].read_bytes()).hexdigest()[:12]
    home = ROOT / "build" / "peers" / f"darshan-{digest}-{mpi}"
    done = home / "bin" / "darshan-parser"
    if done.is_file() and (home / "lib" / "libdarshan.so").is_file():
        return home
    with _building(home):
        if not done.is_file():
            _make_darshan(archives[-1], home, mpi)
    return home


def _make_darshan(archive: Path, home: Path, mpi: str) -> None:
    """darshan-runtime, then darshan-util (its darshan-parser last: the mark of a whole build)."""
    with tempfile.TemporaryDirectory(dir=ROOT / "build") as tmp:
        src = _unpacked(archive, Path(tmp))
        steps = [(src, ["./prepare.sh"]),
                 (src / "darshan-runtime", ["./configure", "--with-log-path-by-env=DARSHAN_LOGPATH",
                                            "--with-jobid-env=NONE", f"--prefix={home}", f"CC=mpicc.{mpi}"]),
                 (src / "darshan-runtime", ["make", "-j2"]), (src / "darshan-runtime", ["make", "install"]),
                 (src / "darshan-util", ["./configure", f"--prefix={home}"]),
                 (src / "darshan-util", ["make", "-j2"]), (src / "darshan-util", ["make", "install"])]
        for cwd, cmd in steps:
            p = subprocess.run(cmd, cwd=cwd, env=base_env(mpi), capture_output=True, text=True)
            if p.returncode != 0:
                raise BenchError(f"building Darshan: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")


def mpip_rows(report: str, section: str) -> list[list[str]]:
    """The rows of one section of an mpiP report ("Callsite Time statistics", ...), split in columns."""
    rows, inside = [], False
    for line in report.splitlines():
        if line.startswith(f"@--- {section}"):
            inside = True
        elif line.startswith("@---"):
            inside = False
        elif inside and line.strip():
            rows.append(line.split())
    return rows


def mpip_calls(report: str, function: str) -> int:
    """Calls of an MPI function (mpiP's name: Send, Isend...) in an mpiP report, over all ranks: the
    "*" rows of its "Callsite Time statistics"."""
    return sum(int(f[3]) for f in mpip_rows(report, "Callsite Time statistics")
               if len(f) >= 4 and f[0] == function and f[2] == "*")


def run(mpi: str, prog: str, exe_dir: Path, tool: tuple[str, Path | None, dict[str, str]] | None, tmp: Path,
        counter: list[int]) -> float:
    """One run: the 8-byte hop (µs) or the message rate (messages/s), checked to be measured."""
    counter[0] += 1
    cwd = tmp / f"run-{counter[0]:04d}"
    cwd.mkdir()
    cmd = launcher(mpi, "core")
    if tool is not None:
        kind, lib, settings = tool
        if kind == "mpilens":
            cmd += tool_env_args(mpi, lib, cwd / "out", "profile", settings)
        elif kind == "mpilens+mpiP":  # the runtime first, mpiP after it in the same preload
            args = tool_env_args(mpi, lib, cwd / "out", "profile", {"MPIP": "-k 0"})
            after = str(settings["after"])
            cmd += [f"{a}:{after}" if a.startswith("LD_PRELOAD=") else a for a in args]
            if mpi != "openmpi":
                i = cmd.index("LD_PRELOAD")
                cmd[i + 1] += f":{after}"
        else:
            cmd += env_args(mpi, [("LD_PRELOAD", str(lib)), *settings.items()])
    cmd += [str(exe_dir / prog), "20", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=base_env(mpi), timeout=600, cwd=cwd)
    if r.returncode != 0:
        raise BenchError(f"failed (exit {r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    fn = "Send" if prog == "pingpong" else "Isend"
    if tool is not None and tool[0].startswith("mpilens"):
        prof = json.loads((cwd / "out" / "profile.json").read_text())
        if sum(prof["functions"][f"MPI_{fn}"]["calls"]) <= 0:
            raise BenchError(f"mpilens measured no MPI_{fn}: {' '.join(cmd)}")
    if tool is not None and tool[0] == "mpilens+mpiP":
        reports = list(cwd.glob("*.mpiP"))
        if len(reports) != 1 or mpip_calls(reports[0].read_text(), fn) <= 0:
            raise BenchError(f"mpiP after mpilens wrote no report counting {fn}: {' '.join(cmd)}")
    elif tool is not None and tool[0] == "caliper":
        if not re.search(rf"^MPI_{fn}\s+\d+", r.stdout + r.stderr, re.M):
            raise BenchError(f"Caliper reported no MPI_{fn}: {' '.join(cmd)}\n{r.stdout[-500:]}\n{r.stderr[-500:]}")
    elif tool is not None and tool[0] == "mpiP":
        reports = list(cwd.glob("*.mpiP"))
        if len(reports) != 1 or mpip_calls(reports[0].read_text(), fn) <= 0:
            raise BenchError(f"mpiP wrote no report counting {fn}: {' '.join(cmd)}\n{r.stdout[-500:]}")
    shutil.rmtree(cwd, ignore_errors=True)
    if prog == "pingpong":
        return float(dict(PP_RE.findall(r.stdout))["8"])
    return float(MR_RE.search(r.stdout).group(3))


def bench(mpi: str, rounds: int, tmp: Path, caliper: bool = False) -> dict[str, dict[str, list[float]]]:
    exe_dir = compile_programs(mpi)
    ours = copy_runtimes(mpi, {"now": ROOT / "build" / "lib"}, tmp)["now"]
    mpip = build_mpip(mpi)
    configs = {"mpilens": ("mpilens", ours, {}), "mpilens 1/64": ("mpilens", ours, {"MPILENS_TIME_SAMPLE": "64"}),
               "mpiP -k 0": ("mpiP", mpip, {"MPIP": "-k 0"}), "mpiP": ("mpiP", mpip, {"MPIP": ""}),
               "mpilens + mpiP -k 0": ("mpilens+mpiP", ours, {"after": str(mpip)})}
    if caliper:
        configs["Caliper"] = ("caliper", build_caliper(mpi), {"CALI_CONFIG": "mpi-report"})
    ratios: dict[str, dict[str, list[float]]] = {c: {"hop": [], "rate": []} for c in configs}
    rng, counter = random.Random(7), [0]
    for r in range(rounds):
        order = [None, *configs]
        rng.shuffle(order)
        got = {c: (run(mpi, "pingpong", exe_dir, None if c is None else configs[c], tmp, counter),
                   run(mpi, "msgrate", exe_dir, None if c is None else configs[c], tmp, counter)) for c in order}
        for c in configs:
            ratios[c]["hop"].append(got[c][0] / got[None][0])
            ratios[c]["rate"].append(got[c][1] / got[None][1])
        log(f"{mpi}: round {r + 1} of {rounds}")
    return ratios


def lammps(rounds: int, tmp: Path) -> tuple[str, dict[str, list[float]]]:
    """Debian's LAMMPS (in.indent, two runs of 30,000 steps, 2 ranks bound to cores; bench/lammps.py)
    plain, under mpilens, under mpiP -k 0 and under both, in a fresh random order each round: per
    configuration the ratios of LAMMPS' own loop time (the sum of its two runs) to the plain run's,
    and the plain loop times."""
    from lammps import INDENT, LOOP_RE, lammps_mpi

    exe = shutil.which("lmp")
    if exe is None or not (INDENT / "in.indent").is_file():
        raise BenchError("lmp or its indent example is missing: `make deps` installs lammps and lammps-examples")
    mpi = lammps_mpi(exe)
    work = tmp / "indent"
    shutil.copytree(INDENT, work)
    ours = copy_runtimes(mpi, {"now": ROOT / "build" / "lib"}, tmp)["now"]
    mpip = str(build_mpip(mpi))

    configs = {"mpilens": env_args(mpi, [("LD_PRELOAD", str(ours))]),
               "mpiP -k 0": env_args(mpi, [("LD_PRELOAD", mpip), ("MPIP", "-k 0")]),
               "mpilens + mpiP -k 0": env_args(mpi, [("LD_PRELOAD", f"{ours}:{mpip}"), ("MPIP", "-k 0")])}
    ratios: dict[str, list[float]] = {c: [] for c in configs}
    ratios["plain loop time, s"] = []
    rng = random.Random(11)
    for r in range(rounds):
        order = [None, *configs]
        rng.shuffle(order)
        loop = {}
        for c in order:
            for old in work.glob("*.mpiP"):
                old.unlink()
            out = tmp / "lammps-run"
            shutil.rmtree(out, ignore_errors=True)
            cmd = launcher(mpi, "core") + (configs[c] + env_args(mpi, [("MPILENS_OUTPUT", str(out))]) if c else []) + \
                [exe, "-in", "in.indent", "-log", "none"]
            p = subprocess.run(cmd, capture_output=True, text=True, env=base_env(mpi), cwd=work, timeout=600)
            loops = LOOP_RE.findall(p.stdout)
            if p.returncode != 0 or len(loops) != 2:
                raise BenchError(f"LAMMPS failed: {' '.join(cmd)}\n{p.stdout[-1000:]}\n{p.stderr[-1000:]}")
            if c and "mpiP" in c and len(list(work.glob("*.mpiP"))) != 1:
                raise BenchError(f"mpiP wrote no report: {' '.join(cmd)}")
            if c and "mpilens" in c and not (out / "profile.json").is_file():
                raise BenchError(f"mpilens wrote no profile: {' '.join(cmd)}")
            loop[c] = sum(float(t) for t, _ in loops)
        for c in configs:
            ratios[c].append(loop[c] / loop[None])
        ratios["plain loop time, s"].append(loop[None])
        log(f"LAMMPS ({mpi}): round {r + 1} of {rounds}")
    return mpi, ratios


IMPI_IMB = ROOT / "build" / "mpis" / "impi" / "bin" / "IMB-MPI1"
NETPIPE = {"openmpi": "NPopenmpi", "mpich": "NPmpich2"}
IMB_RE = re.compile(r"^\s+8\s+\d+\s+([\d.]+)\s", re.M)


def apps(mpi: str, rounds: int, tmp: Path) -> dict[str, dict[str, list[float]]]:
    """Two applications nobody here wrote, plain and under each tool, in a fresh random order each
    round: Debian's NetPIPE (NPopenmpi / NPmpich2) at 8 bytes (its one-way time) and at 1 MiB (its
    throughput), and on MPICH the Intel MPI Benchmarks' IMB-MPI1 PingPong at 8 bytes (the binary of
    the impi-rt wheel, which links libmpi.so.12, run on Debian's MPICH through that soname). Per
    configuration the ratios with / without of each measure, and the plain values."""
    exe = shutil.which(NETPIPE[mpi])
    if exe is None:
        raise BenchError(f"{NETPIPE[mpi]} is missing: `make deps` installs netpipe-openmpi and netpipe-mpich2")
    ours = copy_runtimes(mpi, {"now": ROOT / "build" / "lib"}, tmp)["now"]
    mpip = str(build_mpip(mpi))
    env = base_env(mpi)
    soname = tmp / "abi"
    if mpi == "mpich" and IMPI_IMB.is_file():
        soname.mkdir()
        (soname / "libmpi.so.12").symlink_to(next(Path("/usr/lib").rglob("libmpich.so.12")))
        env["LD_LIBRARY_PATH"] = f"{soname}:{env.get('LD_LIBRARY_PATH', '')}"

    configs = {"mpilens": [("LD_PRELOAD", str(ours))], "mpiP -k 0": [("LD_PRELOAD", mpip), ("MPIP", "-k 0")],
               "mpilens + mpiP -k 0": [("LD_PRELOAD", f"{ours}:{mpip}"), ("MPIP", "-k 0")]}
    programs = {"NetPIPE 8 B one-way time": [exe, "-l", "8", "-u", "8", "-o", "np.out"],
                "NetPIPE 1 MiB throughput": [exe, "-l", "1048576", "-u", "1048576", "-o", "np.out"]}
    if soname.is_dir():
        programs["IMB PingPong 8 B time"] = [str(IMPI_IMB), "PingPong", "-msglog", "3:3", "-iter", "20000",
                                             "-iter_policy", "off"]
    out: dict[str, dict[str, list[float]]] = {c: {m: [] for m in programs} for c in configs}
    out["plain"] = {m: [] for m in programs}
    rng = random.Random(13)
    for r in range(rounds):
        for measure, argv in programs.items():
            order = [None, *configs]
            rng.shuffle(order)
            got = {}
            for c in order:
                cwd = tmp / "app-run"
                shutil.rmtree(cwd, ignore_errors=True)
                cwd.mkdir()
                extra = env_args(mpi, [*configs[c], ("MPILENS_OUTPUT", str(cwd / "out"))]) if c else []
                cmd = launcher(mpi, "core") + extra + argv
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
                if p.returncode != 0:
                    raise BenchError(f"failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout[-800:]}\n{p.stderr[-800:]}")
                if c and "mpiP" in c and len(list(cwd.glob("*.mpiP"))) != 1:
                    raise BenchError(f"mpiP wrote no report: {' '.join(cmd)}")
                if c and "mpilens" in c and not (cwd / "out" / "profile.json").is_file():
                    raise BenchError(f"mpilens wrote no profile: {' '.join(cmd)}")
                if measure.startswith("NetPIPE"):
                    size, mbps, secs = (cwd / "np.out").read_text().split()[:3]
                    got[c] = float(secs) if "time" in measure else float(mbps)
                else:
                    got[c] = float(IMB_RE.search(p.stdout).group(1))
            for c in configs:
                out[c][measure].append(got[c] / got[None])
            out["plain"][measure].append(got[None])
        log(f"applications ({mpi}): round {r + 1} of {rounds}")
    return out


def table(mpi: str, ratios: dict[str, dict[str, list[float]]]) -> str:
    lines = [f"{mpi}: with / without, median over rounds (95 % interval)", "",
             "| tool | 8 B hop | message rate kept |", "|---|---:|---:|"]
    for c, v in ratios.items():
        cells = []
        for k in ("hop", "rate"):
            lo, hi = bootstrap_median_ci(v[k])
            cells.append(f"{statistics.median(v[k]):.3f} ({lo:.3f}–{hi:.3f})")
        lines.append(f"| {c} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", nargs="?", choices=["bench", "build"], default="bench")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--mpi", default="openmpi")
    p.add_argument("--caliper", action="store_true", help="also build and measure Caliper (a few minutes to build)")
    p.add_argument("--lammps", action="store_true",
                   help="instead: Debian's LAMMPS loop time under mpilens, mpiP and both (its MPI's)")
    p.add_argument("--apps", action="store_true",
                   help="instead: NetPIPE (and on MPICH the Intel MPI Benchmarks' PingPong) under mpilens, mpiP and both")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    try:
        if a.what == "build":
            for mpi in a.mpi.split(","):
                print(build_mpip(mpi))
                if a.caliper:
                    print(build_caliper(mpi))
            return 0
        if a.lammps:
            with tempfile.TemporaryDirectory() as tmp:
                mpi, loop = lammps(a.rounds, Path(tmp))
            print(f"LAMMPS in.indent ({mpi}, 2 ranks): loop time with / without, median over rounds (95 % interval)\n")
            print("| tool | loop time |\n|---|---:|")
            for c, v in loop.items():
                lo, hi = bootstrap_median_ci(v)
                print(f"| {c} | {statistics.median(v):.3f} ({lo:.3f}–{hi:.3f}) |")
            if a.json:
                a.json.write_text(json.dumps({"lammps": {mpi: loop}}, indent=1))
            return 0
        if a.apps:
            res = {}
            for mpi in a.mpi.split(","):
                with tempfile.TemporaryDirectory() as tmp:
                    res[mpi] = apps(mpi, a.rounds, Path(tmp))
                measures = list(res[mpi]["plain"])
                print(f"{mpi}: with / without, median over rounds (95 % interval); plain: median\n")
                print("| tool | " + " | ".join(measures) + " |\n|---|" + "---:|" * len(measures))
                for c, v in res[mpi].items():
                    cells = []
                    for m in measures:
                        lo, hi = bootstrap_median_ci(v[m])
                        cells.append(f"{statistics.median(v[m]):.4g}" if c == "plain" else
                                     f"{statistics.median(v[m]):.3f} ({lo:.3f}–{hi:.3f})")
                    print(f"| {c} | " + " | ".join(cells) + " |")
                print()
            if a.json:
                a.json.write_text(json.dumps({"apps": res}, indent=1))
            return 0
        out = {}
        for mpi in a.mpi.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                out[mpi] = bench(mpi, a.rounds, Path(tmp), a.caliper)
            print(table(mpi, out[mpi]))
            print()
        if a.json:
            a.json.write_text(json.dumps(out, indent=1))
    except BenchError as err:
        print(f"peers.py: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
