"""Start an MPI job under mpilens: find the launcher and the program, pick the runtime that
matches the program's MPI, validate the settings, and pass the preload through the launcher."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import build_info, imports, layout, safefile
from .build_info import MPI_FLAVORS, check_program, helper_env, preload_libraries
from .elf import dynamic_symbols
from .errors import ConfigError, LaunchError

LAUNCHERS = {
    "mpirun", "mpiexec", "orterun", "prterun", "mpirun.openmpi", "mpiexec.openmpi",
    "mpirun.mpich", "mpiexec.mpich", "mpiexec.hydra", "srun",
}
INTERPRETERS = re.compile(r"^(python[\d.]*|pypy[\d.]*|perl|bash|sh|dash|env|julia|Rscript|ruby)$")


@dataclass
class Plan:
    """What `mpilens run` will execute."""

    argv: list[str]
    env: dict[str, str]
    mpi: str
    launcher: str  # openmpi | mpich | srun | none
    outdir: Path
    created_outdir: bool  # mpilens made it (and may remove it if the job leaves nothing)
    program: Path | None
    notes: list[str] = field(default_factory=list)
    imports: dict | None = None  # imports.json: the MPI functions the program calls past the runtime


def _which(name: str, env: dict[str, str] | None = None) -> str | None:
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name, path=(env if env is not None else os.environ).get("PATH"))


def split_env_prefix(command: list[str]) -> tuple[list[str], dict[str, str]]:
    """`env NAME=VALUE ... LAUNCHER ...` (how a user gives one side of `mpilens repeat` the environment
    of another MPI): return the command after the assignments and the assignments. env's options
    other than the assignments change more than the environment and are refused."""
    if not command or os.path.basename(command[0]) != "env":
        return command, {}
    assigned: dict[str, str] = {}
    i = 1
    while i < len(command):
        a = command[i]
        if a == "--":
            i += 1
            break
        if a.startswith("-"):
            raise LaunchError(f"env {a}: mpilens run takes only NAME=VALUE assignments before the launcher")
        name, eq, value = a.partition("=")
        if not eq:
            break
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise LaunchError(f"env {a}: {name!r} is not an environment variable's name")
        assigned[name] = value
        i += 1
    if i >= len(command):
        raise LaunchError("env with no command after its assignments: mpilens run -- env NAME=VALUE mpirun ...")
    return command[i:], assigned


def launcher_kind(exe: str, env: dict[str, str] | None = None) -> str:
    """Return which launcher family an executable is: openmpi (ORTE, PRRTE), mpich (MPICH's Hydra,
    and every launcher built on it: Intel MPI's mpirun and mpiexec, MVAPICH's) or srun."""
    base = os.path.basename(exe)
    real = os.path.basename(os.path.realpath(exe))
    if base == "srun" or real == "srun":
        return "srun"
    for name in (real, base):
        if "orterun" in name or "prterun" in name or "openmpi" in name:
            return "openmpi"
        if "hydra" in name or "mpich" in name:
            return "mpich"
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, errors="replace", timeout=20, env=env)
        text = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LaunchError(f"cannot run {exe} --version to identify the launcher: {err}") from err
    if "Open MPI" in text or "OpenRTE" in text or "Open RTE" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text or "MVAPICH" in text:
        return "mpich"
    raise LaunchError(f"{exe} is neither an Open MPI launcher nor a Hydra one (MPICH, Intel MPI, MVAPICH); "
                      f"its --version says: {text.strip()[:80]!r}")


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_program(args: list[str], env: dict[str, str] | None = None) -> str | None:
    """Return the program a launcher runs: the first argument that is an executable linking an MPI
    library, else the first executable file. Launcher options may name executables of their own (an
    rsh agent: `-launcher-exec AGENT`, `--mca plm_rsh_agent AGENT`, `-launcher ssh`), which link no
    MPI; a launcher's options need no table this way."""
    first = None
    for a in args:
        if a.startswith("-"):
            continue
        path = _which(a, env)
        if path and os.path.isfile(path) and not os.path.isdir(path):
            if program_library(path, env)[0] is not None:
                return path
            first = first or path
    return first


def library_flavor(lib: str) -> str | None:
    """Return openmpi, mpich or abi (the MPI-5 standard ABI) for an MPI shared library, from its
    name (the standard names it libmpi_abi) or the symbols it defines (read from the file: a few
    milliseconds; `nm -D` only for a file elf.py cannot read)."""
    if os.path.basename(lib).startswith("libmpi_abi.so"):
        return "abi"
    symbols = dynamic_symbols(lib)
    if symbols is not None:
        defined = [name for name, _, is_defined in symbols if is_defined]
    else:
        nm = shutil.which("nm")
        if nm is None:
            return None
        defined = subprocess.run([nm, "-D", "--defined-only", lib], capture_output=True, text=True).stdout.split()
    if "ompi_mpi_comm_world" in defined:
        return "openmpi"
    if any(name.startswith(("MPIR_", "MPID_")) for name in defined):
        return "mpich"
    return None


# the sonames of each ABI's MPI library: Open MPI's since 3.0, the MPICH ABI's (MPICH, Intel MPI,
# MVAPICH, Cray MPICH), the MPI-5 standard ABI's
SONAME_FLAVORS = {"libmpi.so.40": "openmpi", "libmpi.so.12": "mpich", "libmpich.so.12": "mpich",
                  "libmpi_abi.so.1": "abi"}


def program_mpi(program: str) -> tuple[str | None, str]:
    """Return (flavor or None, how it was decided) for the MPI library a program links."""
    flavor, why, _ = program_library(program)
    return flavor, why


# ldd's answers of this process, by program (and its version on disk) and what of the environment
# decides them: `mpilens run` asks about the program it finds, then about the one it runs (the same)
_LDD: dict[tuple[str, int, str | None, str | None], str | None] = {}


def _ldd(program: str, env: dict[str, str] | None) -> str | None:
    e = os.environ if env is None else env
    try:
        version = os.stat(program).st_mtime_ns
    except OSError:
        return None
    key = (program, version, e.get("LD_LIBRARY_PATH"), e.get("LD_PRELOAD"))
    if key not in _LDD:
        try:
            _LDD[key] = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=30, env=env).stdout
        except (OSError, subprocess.TimeoutExpired):
            _LDD[key] = None
    return _LDD[key]


def program_library(program: str, env: dict[str, str] | None = None) -> tuple[str | None, str, str | None]:
    """Return (flavor or None, how it was decided, the MPI library's path when ldd found it), with the
    job's environment (its LD_LIBRARY_PATH decides the library)."""
    if not _is_elf(program):
        return None, "script", None
    if INTERPRETERS.match(os.path.basename(program)):
        return None, "interpreter", None
    out = _ldd(program, env)
    if out is None:
        return None, "ldd failed", None
    for line in out.splitlines():
        m = re.match(r"\s*(libmpi\S*\.so[.\d]*|libmpich\S*\.so[.\d]*)\s+=>\s+(\S+)", line)
        if m and os.path.exists(m.group(2)) and "cxx" not in m.group(1) and "fort" not in m.group(1) \
                and "mpifh" not in m.group(1) and "usempi" not in m.group(1):
            flavor = library_flavor(m.group(2))
            if flavor:
                return flavor, f"links {m.group(1)}", m.group(2)
        # linked but not found here: the launcher gives the ranks its library path (Intel MPI's
        # mpirun does, for programs without an rpath such as its own IMB); the soname says the ABI
        m = re.match(r"\s*(\S+)\s+=>\s+not found", line)
        if m and m.group(1) in SONAME_FLAVORS:
            return SONAME_FLAVORS[m.group(1)], f"links {m.group(1)} (not found by ldd here)", None
    return None, "no MPI library", None


def default_outdir(program: str | None) -> Path:
    """Return a new run directory name in the current directory."""
    stem = Path(program).name if program else "job"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path.cwd() / f"mpilens-{stem}-{stamp}"
    path, n = base, 2
    while path.exists():
        path = Path(f"{base}-{n}")
        n += 1
    return path


def check_outdir(path: Path) -> Path:
    """Return the absolute run directory path, refusing one that already holds something."""
    path = path.expanduser().absolute()
    if path.exists():
        if not path.is_dir():
            raise LaunchError(f"{path} exists and is not a directory")
        if any(path.iterdir()):
            raise LaunchError(f"{path} already exists and is not empty; choose another -o (nothing was overwritten)")
    return path


def create_outdir(path: Path) -> tuple[bool, str]:
    """Create the run directory and claim it for this run; return whether it had to be created and
    the claim's token (the job's rank 0 checks it: the directory it writes into is the one claimed)."""
    try:
        path.mkdir(parents=True)
        created = True
    except FileExistsError:
        created = False
    except OSError as err:
        raise LaunchError(f"cannot create the run directory {path}: {err.strerror}") from err
    if not path.is_dir():
        raise LaunchError(f"{path} exists and is not a directory")
    if not os.access(path, os.W_OK):
        raise LaunchError(f"the run directory {path} is not writable")
    try:
        token = safefile.claim(layout.claim_file(path))
    except FileExistsError:
        raise LaunchError(f"{path} belongs to another run (it has a {layout.claim_file(path).name}); "
                          "choose another -o (nothing was overwritten)") from None
    except OSError as err:
        raise LaunchError(f"cannot claim the run directory {path}: {err.strerror}") from err
    others = sorted(p.name for p in path.iterdir() if p.name != layout.claim_file(path).name)
    if others:  # written between the check and the claim: not ours to write into
        layout.claim_file(path).unlink(missing_ok=True)
        raise LaunchError(f"{path} is no longer empty (it now holds {others[0]}); choose another -o "
                          "(nothing was overwritten)")
    return created, token


def check_settings(mpi: str, env: dict[str, str], library: str | None = None) -> None:
    """Validate every MPILENS_* setting with the runtime's own parser, and the cvars with the MPI_T
    of the job's MPI library when it is known; raise ConfigError."""
    out = subprocess.run([str(check_program(mpi))], env=helper_env(env, library), capture_output=True, text=True)
    if out.returncode != 0:
        raise ConfigError(out.stdout.strip() or out.stderr.strip() or "invalid mpilens settings")


def plan_run(command: list[str], mpi: str | None, outdir: Path | None, settings: dict[str, str]) -> Plan:
    """Decide how to run command under mpilens; raise LaunchError/ConfigError on bad input."""
    if not command:
        raise LaunchError("no command given: mpilens run [options] -- mpirun -np 4 ./app")
    typed = command
    command, assigned = split_env_prefix(command)
    env = dict(os.environ)
    env.update(assigned)
    first = _which(command[0], env)
    if first is None:
        raise LaunchError(f"{command[0]!r} not found (not on PATH and not an executable file)")
    notes: list[str] = []
    base = os.path.basename(command[0])
    if base in LAUNCHERS or os.path.basename(os.path.realpath(first)) in LAUNCHERS:
        kind = launcher_kind(first, env)
        program = find_program(command[1:], env)
        if program is None and mpi is None:
            tried = [a for a in command[1:] if not a.startswith("-") and not a.isdigit()]
            raise LaunchError("no program to run among the launcher's arguments"
                              + (f" ({', '.join(tried)}: not an executable file)" if tried else "")
                              + "; pass --mpi to start the job anyway")
    else:
        kind, program = "none", first

    flavor, why, library = program_library(program, env) if program else (None, "no program found", None)
    if mpi is None:
        if flavor is not None:
            mpi = flavor
        elif why in ("script", "interpreter") and kind in MPI_FLAVORS:
            mpi = kind
            notes.append(f"{program} is interpreted; using the {kind} runtime of the launcher")
        elif why == "no MPI library":
            raise LaunchError(f"{program} does not use MPI (ldd finds no Open MPI or MPICH library), so there is "
                              "nothing to measure; use --mpi to force a runtime")
        elif kind in MPI_FLAVORS:
            mpi = kind
        else:
            raise LaunchError(f"cannot tell which MPI {program or command[0]} uses ({why}); pass --mpi openmpi|mpich")
    if mpi not in MPI_FLAVORS:
        raise ConfigError(f"--mpi {mpi}: not one of {', '.join(MPI_FLAVORS)}")
    if flavor is not None and flavor != mpi:
        notes.append(f"{program} links {flavor} but --mpi {mpi} was given")
    if kind in MPI_FLAVORS and kind != mpi and mpi != "abi":  # any launcher may start a standard-ABI program
        notes.append(f"the launcher is {kind}'s but the program uses {mpi}: the job may not start")

    for name in ("MPILENS_OUTPUT", "MPILENS_COMMAND", "MPILENS_RUN_TOKEN"):
        if name in settings:
            raise ConfigError(f"{name} is set by mpilens run itself" + (" (use -o DIR)" if name == "MPILENS_OUTPUT" else ""))
    env.update(settings)
    out = check_outdir(outdir if outdir is not None else default_outdir(program))
    tool_env = {k: v for k, v in env.items() if k.startswith("MPILENS_")}
    tool_env["MPILENS_OUTPUT"] = str(out)
    tool_env["MPILENS_COMMAND"] = json.dumps(typed)
    libs = preload_libraries(mpi, env.get("MPILENS_MODE", "profile"))
    preload = ":".join([*map(str, libs), *([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else [])])
    env.update(tool_env)
    # before anything is created (a refused run leaves no trace); with the program's MPI library
    # when it is of the runtime's family
    check_settings(mpi, env, library if flavor == mpi else None)
    created, token = create_outdir(out)
    tool_env["MPILENS_RUN_TOKEN"] = token
    env["MPILENS_RUN_TOKEN"] = token

    forwarded = dict(tool_env, LD_PRELOAD=preload)
    argv, user_preload = merge_preload(list(command), kind, ":".join(map(str, libs)), env.get("LD_PRELOAD", ""))
    if user_preload:
        del forwarded["LD_PRELOAD"]
    if kind == "openmpi":
        extra = [x for k, v in forwarded.items() for x in ("-x", f"{k}={v}")]
        argv = [argv[0], *extra, *argv[1:]]
    elif kind == "mpich":
        extra = [x for k, v in forwarded.items() for x in ("-genv", k, v)]
        argv = [argv[0], *extra, *argv[1:]]
    elif kind == "srun":
        argv = [argv[0], "--export=ALL," + ",".join(f"{k}={v}" for k, v in forwarded.items()), *argv[1:]]
    else:
        env["LD_PRELOAD"] = preload
    imported = None
    if program and _is_elf(program):
        imported = imports.find(program, str(build_info.runtime_library(mpi)), mpi, build_info.helper_dir(mpi), env)
        missed = imports.unmeasured_names(imported)
        if missed:
            names = ", ".join(sorted({n for n, _ in missed}))
            notes.append(f"not measured ({len(missed)} MPI function{'s' if len(missed) != 1 else ''} the program "
                         f"or its libraries call past mpilens): {names}")
    return Plan(argv=argv, env=env, mpi=mpi, launcher=kind, outdir=out, created_outdir=created,
                program=Path(program) if program else None, notes=notes, imports=imported)


def merge_preload(argv: list[str], kind: str, ours: str, env_preload: str) -> tuple[list[str], bool]:
    """Put the runtime first in an LD_PRELOAD that the launcher's own options set (Open MPI's
    `-x LD_PRELOAD=V` or `-x LD_PRELOAD`, Hydra's `-genv LD_PRELOAD V` and `-env LD_PRELOAD V`, srun's
    `--export=...,LD_PRELOAD=V`): the user's value would replace the runtime's otherwise, and the
    libraries it names (Darshan, mpiP) come after the runtime, which then passes every call it
    measures on to them (docs/tools.md). Return the new argv and whether the user set one."""
    out = list(argv)
    found = False
    joined = lambda v: ":".join(x for x in (ours, v) if x)  # noqa: E731
    i = 1
    while i < len(out):
        a = out[i]
        if kind == "openmpi" and a in ("-x", "--x") and i + 1 < len(out):
            name, eq, value = out[i + 1].partition("=")
            if name == "LD_PRELOAD":
                out[i + 1] = f"LD_PRELOAD={joined(value if eq else env_preload)}"
                found = True
            i += 2
            continue
        if kind == "mpich" and a in ("-genv", "-env", "--genv", "--env") and i + 2 < len(out):
            if out[i + 1] == "LD_PRELOAD":
                out[i + 2] = joined(out[i + 2])
                found = True
            i += 3
            continue
        if kind == "srun" and a.startswith("--export="):
            items = a[len("--export="):].split(",")
            for j, item in enumerate(items):
                if item.startswith("LD_PRELOAD="):
                    items[j] = "LD_PRELOAD=" + joined(item[len("LD_PRELOAD="):])
                    found = True
            out[i] = "--export=" + ",".join(items)
        i += 1
    return out, found


def execute(plan: Plan) -> int:
    """Run the planned job in the foreground; return its exit status."""
    try:
        proc = subprocess.Popen(plan.argv, env=plan.env)
    except OSError as err:
        raise LaunchError(f"cannot start {plan.argv[0]}: {err.strerror}") from err
    interrupts = 0
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            # The job got the same SIGINT and is writing its data; a second ^C terminates it,
            # a third kills it.
            interrupts += 1
            if interrupts == 2:
                proc.terminate()
            elif interrupts > 2:
                proc.kill()
