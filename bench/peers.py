#!/usr/bin/env python3
"""mpilens beside the tools users would pick instead, measured in one sitting: mpiP (LLNL's PMPI
profiler), Caliper (LLNL; its MPI wrapping through GOTCHA, `CALI_CONFIG=mpi-report`) and Open MPI's
own software performance counters. mpiP and Caliper are built from their source archives in
../shared/peers (once per machine, in ~/.cache/mpilens/peers/: PEER_BUILDS; one build per MPI;
Caliper with --caliper, a few minutes); Open MPI's counters are the same Open MPI version built with them compiled in
(bench/ompi_spc_build.sh, with --spc: 15-25 minutes, once). An unmodified program does not start
Caliper by itself: a three-line preloaded library (PEER_BUILDS/.../libcalinit.so) calls
cali_mpi_init() and cali_init() before main.

The tools (configurations):

    mpilens                     profile mode, every call timed (build/lib's runtime, copied first)
    mpilens 1/64                profile mode, MPILENS_TIME_SAMPLE=64
    mpilens trace               trace mode
    mpiP -k 0                   mpiP without call-site stack walks (its cheapest)
    mpiP                        mpiP's default (call sites one level deep)
    mpilens + mpiP -k 0         both in one job (LD_PRELOAD=runtime:libmpiP.so): each call measured
                                by mpilens, then passed on to mpiP (docs/tools.md)
    Caliper                     CALI_CONFIG=mpi-report (--caliper)
    Open MPI counters, built in the counters build, no counter attached (what compiling them in
                                costs; --spc, Open MPI only)
    Open MPI counters, all on   the same with every counter attached (mpi_spc_attach all)

The measures (--measures): the 8-byte hop and the message rate of bench/overhead.py's programs;
Debian's NetPIPE (8-byte one-way time, 1 MiB throughput); Debian's LAMMPS loop time (in.indent,
2 ranks, on the MPI it links); on MPICH, the Intel MPI Benchmarks' IMB-MPI1 PingPong at 8 bytes (the
impi-rt wheel's binary, run on Debian's MPICH through libmpi.so.12).

Each round runs each measure plain and under each tool, in a fresh random order, and keeps the
ratio of each tool's figure to the plain run's of the same round (they share the machine's drift):
the table gives the median ratio over rounds with its bootstrap 95 % interval. Every tool run is
checked to have measured: mpilens' profile.json, mpiP's report and Caliper's output count an MPI
function the program calls; Open MPI's counters are checked once per sitting to count the message
rate's MPI_Isend calls exactly (bench/spc.py).

Usage: .venv/bin/python bench/peers.py [--rounds N] [--mpi openmpi,mpich] [--measures hop,rate,...]
                                       [--caliper] [--spc] [--json FILE]
       .venv/bin/python bench/peers.py build [--mpi openmpi] [--caliper]   (prints the libraries' paths)
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
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
from collections.abc import Callable
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
)

PEERS = ROOT.parent / "shared" / "peers"
# where the peers are built, once per machine rather than per checkout (a fresh clone's tests would
# otherwise build Caliper and Darshan again: about 3 minutes here): MPILENS_PEER_BUILDS, else the
# user's cache directory. A build's name holds what it is made from: the archive's digest, its
# options and the MPI's compile line
PEER_BUILDS = Path(os.environ.get("MPILENS_PEER_BUILDS")
                   or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mpilens" / "peers")
MPIP_ARCHIVE = "mpiP-*.tar.gz"
IMPI_IMB = ROOT / "build" / "mpis" / "impi" / "bin" / "IMB-MPI1"
NETPIPE = {"openmpi": "NPopenmpi", "mpich": "NPmpich2"}
IMB_RE = re.compile(r"^\s+8\s+\d+\s+([\d.]+)\s", re.M)
MEASURES = ("hop", "rate", "netpipe", "lammps", "imb")


@contextlib.contextmanager
def _building(home: Path):
    """Hold the lock of one peer build (PEER_BUILDS/NAME.lock): two test workers or benchmarks that
    want the same build wait for the one that makes it, then find it made."""
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _key(parts: list[bytes], mpi: str | None) -> str:
    """The digest naming a build: what it is made from, and the MPI's compile line (another MPI
    installed, or moved, is another build)."""
    h = hashlib.sha256(b"\0".join(parts))
    if mpi is not None:
        flag = "--showme" if mpi == "openmpi" else "-show"
        p = subprocess.run([f"mpicc.{mpi}", flag], capture_output=True, text=True)
        h.update(p.stdout.encode())
    return h.hexdigest()[:12]


def _unpacked(archive: Path, into: Path) -> Path:
    """The source tree of a peer's archive, unpacked into a directory: its one top folder."""
    subprocess.run(["tar", "xzf", str(archive), "-C", str(into)], check=True)
    (src,) = [p for p in into.iterdir() if p.is_dir()]
    return src


def build_mpip(mpi: str = "openmpi") -> Path:
    """libmpiP.so built with the MPI's compiler wrapper, once per archive and MPI (PEER_BUILDS), as
    ../shared/peers/README.md says: no libunwind, no bfd (call sites as addresses)."""
    archives = sorted(PEERS.glob(MPIP_ARCHIVE))
    if not archives:
        raise BenchError(f"no {MPIP_ARCHIVE} in {PEERS}")
    archive = archives[-1]
    home = PEER_BUILDS / f"mpiP-{_key([archive.read_bytes()], mpi)}-{mpi}"
    lib = home / "libmpiP.so"
    if lib.is_file():
        return lib
    with _building(home):
        if not lib.is_file():
            _make_mpip(archive, home, mpi)
    return lib


def _make_mpip(archive: Path, home: Path, mpi: str) -> None:
    lib = home / "libmpiP.so"
    with tempfile.TemporaryDirectory(dir=PEER_BUILDS) as tmp:
        src = _unpacked(archive, Path(tmp))
        env = dict(base_env(mpi), CC=f"mpicc.{mpi}", F77=f"mpif77.{mpi}", LOGNAME="mpilens")
        for cmd in (["./configure", "--disable-libunwind", "--disable-bfd"], ["make", "shared"]):
            p = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise BenchError(f"building mpiP: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / "libmpiP.so", home / "libmpiP.so.tmp")
        (home / "libmpiP.so.tmp").replace(lib)


# its MPI services, without what the sittings and tests do not use (its query tools, Kokkos' bindings)
CALIPER_OPTIONS = ("-DWITH_MPI=On", "-DBUILD_TESTING=Off", "-DWITH_TOOLS=Off", "-DWITH_KOKKOS=Off")


def build_caliper(mpi: str = "openmpi") -> Path:
    """Caliper built with the MPI's wrappers (cmake, as ../shared/peers/README.md says), installed under
    PEER_BUILDS, and the preloaded library that starts it in an unmodified program; returns the
    latter."""
    archives = sorted(PEERS.glob("Caliper-*.tar.gz"))
    if not archives:
        raise BenchError(f"no Caliper-*.tar.gz in {PEERS}")
    home = PEER_BUILDS / f"caliper-{_key([archives[-1].read_bytes(), ' '.join(CALIPER_OPTIONS).encode()], mpi)}-{mpi}"
    init = home / "libcalinit.so"
    if init.is_file():
        return init
    with _building(home):
        if not init.is_file():
            _make_caliper(archives[-1], home, mpi)
    return init


def _make_caliper(archive: Path, home: Path, mpi: str) -> None:
    init = home / "libcalinit.so"
    with tempfile.TemporaryDirectory(dir=PEER_BUILDS) as tmp:
        src = _unpacked(archive, Path(tmp))
        (src / "build").mkdir()
        cxx = "mpicxx.openmpi" if mpi == "openmpi" else "mpicxx.mpich"
        for cmd in (["cmake", *CALIPER_OPTIONS, f"-DMPI_C_COMPILER=mpicc.{mpi}", f"-DMPI_CXX_COMPILER={cxx}",
                     f"-DCMAKE_INSTALL_PREFIX={home}", ".."], ["make", "-j2"], ["make", "install"]):
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
    logs to $DARSHAN_LOGPATH, no job id), installed under PEER_BUILDS, with its utilities
    (darshan-parser, an independent reader of its logs), which use no MPI and are built once for
    every MPI; returns the prefix (lib/libdarshan.so, bin/darshan-parser)."""
    archives = sorted(PEERS.glob("darshan-*.tar.gz"))
    if not archives:
        raise BenchError(f"no darshan-*.tar.gz in {PEERS}")
    util = PEER_BUILDS / f"darshan-util-{_key([archives[-1].read_bytes()], None)}"
    parser = util / "bin" / "darshan-parser"
    if not parser.is_file():
        with _building(util):
            if not parser.is_file():
                _make_darshan(archives[-1], util, None)
    home = PEER_BUILDS / f"darshan-{_key([archives[-1].read_bytes()], mpi)}-{mpi}"
    done = home / "bin" / "darshan-parser"
    if done.is_file() and (home / "lib" / "libdarshan.so").is_file():
        return home
    with _building(home):
        if not done.is_file():
            _make_darshan(archives[-1], home, mpi)
            done.parent.mkdir(parents=True, exist_ok=True)
            done.symlink_to(parser)  # the mark of a whole build
    return home


def _make_darshan(archive: Path, home: Path, mpi: str | None) -> None:
    """darshan-runtime for an MPI, or (mpi None) darshan-util."""
    with tempfile.TemporaryDirectory(dir=PEER_BUILDS) as tmp:
        src = _unpacked(archive, Path(tmp))
        steps = [(src, ["./prepare.sh"])]
        if mpi is not None:
            steps += [(src / "darshan-runtime", ["./configure", "--with-log-path-by-env=DARSHAN_LOGPATH",
                                                 "--with-jobid-env=NONE", f"--prefix={home}", f"CC=mpicc.{mpi}"]),
                      (src / "darshan-runtime", ["make", "-j2"]), (src / "darshan-runtime", ["make", "install"])]
        else:
            steps += [(src / "darshan-util", ["./configure", f"--prefix={home}"]),
                      (src / "darshan-util", ["make", "-j2"]), (src / "darshan-util", ["make", "install"])]
        for cwd, cmd in steps:
            p = subprocess.run(cmd, cwd=cwd, env=base_env(mpi or "openmpi"), capture_output=True, text=True)
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


@dataclasses.dataclass
class Tool:
    """One configuration of a sitting: what measures the run (None: the plain run)."""
    preload: list[str] = dataclasses.field(default_factory=list)  # LD_PRELOAD, in order
    settings: dict[str, str] = dataclasses.field(default_factory=dict)  # the ranks' environment
    mpilens: str | None = None  # mpilens' mode: the run writes a run directory
    mpip: bool = False  # the run writes an mpiP report
    caliper: bool = False  # the run prints Caliper's mpi-report
    spc: str | None = None  # Open MPI's counters build, with mpi_spc_attach none or all


@dataclasses.dataclass
class Measure:
    """One program's figure of merit: its command, how to read the figure, and one MPI function
    the program calls, which every tool must be seen to have counted."""
    argv: list[str]
    read: Callable[[str, Path], float]
    function: str
    env: dict[str, str] = dataclasses.field(default_factory=dict)


def tools(mpi: str, tmp: Path, caliper: bool, spc: Path | None) -> dict[str, Tool]:
    """The configurations of a sitting on one MPI (the runtime copied first: a rebuild during the
    sitting cannot change what is measured)."""
    ours = str(copy_runtimes(mpi, {"now": ROOT / "build" / "lib"}, tmp)["now"])
    mpip = str(build_mpip(mpi))
    out = {"mpilens": Tool([ours], mpilens="profile"),
           "mpilens 1/64": Tool([ours], {"MPILENS_TIME_SAMPLE": "64"}, mpilens="profile"),
           "mpilens trace": Tool([ours], mpilens="trace"),
           "mpiP -k 0": Tool([mpip], {"MPIP": "-k 0"}, mpip=True),
           "mpiP": Tool([mpip], {"MPIP": ""}, mpip=True),
           # each call measured by mpilens, then passed on to mpiP (docs/tools.md)
           "mpilens + mpiP -k 0": Tool([ours, mpip], {"MPIP": "-k 0"}, mpilens="profile", mpip=True)}
    if caliper:
        out["Caliper"] = Tool([str(build_caliper(mpi))], {"CALI_CONFIG": "mpi-report"}, caliper=True)
    if spc is not None and mpi == "openmpi":
        out["Open MPI counters, built in"] = Tool(spc="none")
        out["Open MPI counters, all on"] = Tool(spc="all")
    return out


def _netpipe(kind: str) -> Callable[[str, Path], float]:
    def read(stdout: str, cwd: Path) -> float:
        size, mbps, secs = (cwd / "np.out").read_text().split()[:3]
        return float(secs) if kind == "time" else float(mbps)
    return read


def _lammps_loop(stdout: str, cwd: Path) -> float:
    from lammps import LOOP_RE
    loops = LOOP_RE.findall(stdout)
    if len(loops) != 2:
        raise BenchError(f"LAMMPS printed {len(loops)} loop times, not 2:\n{stdout[-1000:]}")
    return sum(float(t) for t, _ in loops)


def measures(mpi: str, tmp: Path, wanted: list[str]) -> tuple[dict[str, Measure], dict[str, str]]:
    """The measures of a sitting on one MPI, of those wanted that it can run, and the environment
    its runs share. Higher is better for the message rate and the throughput, lower for the rest."""
    exe_dir = compile_programs(mpi)
    env = base_env(mpi)
    out: dict[str, Measure] = {}
    if "hop" in wanted:
        out["8 B hop"] = Measure([str(exe_dir / "pingpong"), "20", "1"],
                                 lambda o, c: float(dict(PP_RE.findall(o))["8"]), "MPI_Send")
    if "rate" in wanted:
        out["message rate"] = Measure([str(exe_dir / "msgrate"), "20", "1"],
                                      lambda o, c: float(MR_RE.search(o).group(3)), "MPI_Isend")
    netpipe = shutil.which(NETPIPE[mpi])
    if "netpipe" in wanted:
        if netpipe is None:
            raise BenchError(f"{NETPIPE[mpi]} is missing: `make deps` installs netpipe-openmpi and netpipe-mpich2")
        out["NetPIPE 8 B time"] = Measure([netpipe, "-l", "8", "-u", "8", "-o", "np.out"], _netpipe("time"),
                                          "MPI_Send")
        out["NetPIPE 1 MiB throughput"] = Measure([netpipe, "-l", "1048576", "-u", "1048576", "-o", "np.out"],
                                                  _netpipe("throughput"), "MPI_Send")
    if "lammps" in wanted:
        from lammps import INDENT, lammps_mpi
        lmp = shutil.which("lmp")
        if lmp is None or not (INDENT / "in.indent").is_file():
            raise BenchError("lmp or its indent example is missing: `make deps` installs lammps and lammps-examples")
        if lammps_mpi(lmp) == mpi:  # Debian's LAMMPS runs on the MPI it links only
            shutil.copytree(INDENT, tmp / "indent")
            out["LAMMPS loop time"] = Measure([lmp, "-in", str(tmp / "indent" / "in.indent"), "-log", "none"],
                                              _lammps_loop, "MPI_Allreduce")
    if "imb" in wanted and mpi == "mpich" and IMPI_IMB.is_file():
        # the impi-rt wheel's binary links libmpi.so.12: Debian's MPICH through that soname
        soname = tmp / "abi"
        soname.mkdir()
        (soname / "libmpi.so.12").symlink_to(next(Path("/usr/lib").rglob("libmpich.so.12")))
        out["IMB PingPong 8 B time"] = Measure(
            [str(IMPI_IMB), "PingPong", "-msglog", "3:3", "-iter", "20000", "-iter_policy", "off"],
            lambda o, c: float(IMB_RE.search(o).group(1)), "MPI_Send",
            {"LD_LIBRARY_PATH": f"{soname}:{env.get('LD_LIBRARY_PATH', '')}"})
    return out, env


def command(mpi: str, tool: Tool | None, measure: Measure, cwd: Path, spc: Path | None) -> list[str]:
    if tool is not None and tool.spc is not None:
        # the counters build's own launcher and library (same version as Debian's: the programs
        # Debian's headers built run on it)
        lib = f"{spc / 'lib'}:{measure.env['LD_LIBRARY_PATH']}" if "LD_LIBRARY_PATH" in measure.env else str(spc / "lib")
        return [str(spc / "bin" / "mpirun"), *launcher(mpi, "core")[1:], "--mca", "mpi_spc_attach", tool.spc,
                "-x", f"LD_LIBRARY_PATH={lib}", *measure.argv]
    pairs = list(measure.env.items())
    if tool is not None:
        pairs += [("LD_PRELOAD", ":".join(tool.preload)), *tool.settings.items()]
        if tool.mpilens:
            pairs += [("MPILENS_OUTPUT", str(cwd / "out")), ("MPILENS_MODE", tool.mpilens)]
    return launcher(mpi, "core") + env_args(mpi, pairs) + measure.argv


def check(tool: Tool | None, measure: Measure, out: str, cwd: Path, cmd: list[str]) -> None:
    """The tool measured the run: it counted the measure's function (Open MPI's counters are checked
    once per sitting, spc.check_counters)."""
    fn = measure.function
    if tool is None:
        return
    if tool.mpilens:
        prof = json.loads((cwd / "out" / "profile.json").read_text())
        if sum(prof["functions"].get(fn, {}).get("calls", [0])) <= 0:
            raise BenchError(f"mpilens counted no {fn}: {' '.join(cmd)}")
    if tool.mpip:
        reports = list(cwd.glob("*.mpiP"))
        if len(reports) != 1 or mpip_calls(reports[0].read_text(), fn.removeprefix("MPI_")) <= 0:
            raise BenchError(f"mpiP wrote no report counting {fn}: {' '.join(cmd)}\n{out[-500:]}")
    if tool.caliper and not re.search(rf"^{fn}\s+\d+", out, re.M):
        raise BenchError(f"Caliper reported no {fn}: {' '.join(cmd)}\n{out[-800:]}")


def sitting(mpi: str, rounds: int, tmp: Path, wanted: list[str], caliper: bool,
            spc: Path | None) -> dict[str, dict[str, list[float]]]:
    """Every tool on every measure, interleaved: each round runs each measure plain and under each
    tool, in a fresh random order, and keeps the ratio of each tool's figure to the plain run's of
    the same round (they share the machine's drift). Returns {tool: {measure: [ratios]}} and, under
    "plain", the plain figures."""
    ms, env = measures(mpi, tmp, wanted)
    ts = tools(mpi, tmp, caliper, spc)
    if spc is not None and mpi == "openmpi":
        import spc as spc_bench
        spc_bench.check_counters(spc, compile_programs(mpi), tmp, 1)
    out: dict[str, dict[str, list[float]]] = {t: {m: [] for m in ms} for t in ["plain", *ts]}
    rng, n = random.Random(7), 0
    for r in range(rounds):
        for name, m in ms.items():
            order = [None, *ts]
            rng.shuffle(order)
            got = {}
            for t in order:
                n += 1
                cwd = tmp / f"run-{n:05d}"
                cwd.mkdir()
                cmd = command(mpi, ts.get(t), m, cwd, spc)
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
                if p.returncode != 0:
                    raise BenchError(f"failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout[-800:]}\n"
                                     f"{p.stderr[-800:]}")
                check(ts.get(t), m, p.stdout + p.stderr, cwd, cmd)
                got[t] = m.read(p.stdout, cwd)
                shutil.rmtree(cwd, ignore_errors=True)
            out["plain"][name].append(got[None])
            for t in ts:
                out[t][name].append(got[t] / got[None])
        log(f"{mpi}: round {r + 1} of {rounds}")
    return out


def table(mpi: str, res: dict[str, dict[str, list[float]]]) -> str:
    """The sitting's table: per tool and measure, the median ratio with its bootstrap 95 % interval;
    the plain row gives the plain medians."""
    names = list(res["plain"])
    lines = [f"{mpi}: with / without, median over rounds (95 % interval); plain: median", "",
             "| tool | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for t, v in res.items():
        cells = []
        for m in names:
            if t == "plain":
                cells.append(f"{statistics.median(v[m]):.4g}")
            else:
                lo, hi = bootstrap_median_ci(v[m])
                cells.append(f"{statistics.median(v[m]):.3f} ({lo:.3f}–{hi:.3f})")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", nargs="?", choices=["bench", "build"], default="bench")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--measures", default=",".join(MEASURES),
                   help=f"of {','.join(MEASURES)} (those an MPI cannot run are left out)")
    p.add_argument("--caliper", action="store_true", help="also build and measure Caliper (a few minutes to build)")
    p.add_argument("--spc", action="store_true",
                   help="also Open MPI's own counters (bench/ompi_spc_build.sh: 15-25 minutes to build, once)")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    wanted = a.measures.split(",")
    if not set(wanted) <= set(MEASURES):
        p.error(f"--measures takes {','.join(MEASURES)}, not {a.measures}")
    try:
        if a.what == "build":
            for mpi in a.mpi.split(","):
                print(build_mpip(mpi))
                if a.caliper:
                    print(build_caliper(mpi))
            return 0
        spc = None
        if a.spc:
            import spc as spc_bench
            spc = spc_bench.spc_prefix()
        res = {}
        for mpi in a.mpi.split(","):
            with tempfile.TemporaryDirectory(prefix="mpilens-peers-") as tmp:
                res[mpi] = sitting(mpi, a.rounds, Path(tmp), wanted, a.caliper, spc)
            print(table(mpi, res[mpi]))
            print()
        if a.json:
            a.json.write_text(json.dumps(res, indent=1))
    except BenchError as err:
        print(f"peers.py: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
