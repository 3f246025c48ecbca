"""MPI_T in the analysis: the variables an MPI exposes (`mpilens mpit list`), and what a run set
and recorded (meta.json "cvars_set", mpit/rank-NNNNNN.jsonl). The recommendation rules that read
them are in mpilens.recommend."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import layout
from . import meta as meta_file
from .build_info import MPI_FLAVORS, helper_env, helper_program
from .errors import LaunchError, RunDirectoryError


# ------------------------------------------------------------------------------------- listing
def list_program(mpi: str) -> Path:
    """The variable lister built for an MPI flavor."""
    return helper_program(mpi, "mpilens-mpit")


def tool_env() -> dict[str, str]:
    """Environment to run a small MPI program as a singleton (no MPILENS_*, root allowed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPILENS_") and k != "LD_PRELOAD"}
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


_LIST_CACHE: dict[tuple[str, bool, str | None], dict[str, Any]] = {}


def list_variables(mpi: str, init: bool = True, library: str | None = None) -> dict[str, Any]:
    """Every cvar and pvar of an MPI as its MPI_T describes them. With init, after MPI_Init in a
    singleton process (the variables of the components in use); without, before MPI_Init (Open MPI
    then lists the parameters of all its components)."""
    if mpi not in MPI_FLAVORS:
        raise LaunchError(f"--mpi {mpi}: not one of {', '.join(MPI_FLAVORS)}")
    key = (mpi, init, library)
    if key in _LIST_CACHE:
        return _LIST_CACHE[key]
    argv = [str(list_program(mpi))] + ([] if init else ["--no-init"])
    try:
        out = subprocess.run(argv, env=helper_env(tool_env(), library), capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LaunchError(f"cannot run {argv[0]}: {err}") from err
    if out.returncode != 0:
        why = out.stderr.decode(errors="replace").strip()[-300:]
        raise LaunchError(f"{argv[0]} failed (exit {out.returncode}): {why}")
    try:  # the MPI's own strings, in its encoding: Intel MPI's version has a Latin-1 "®"
        text = out.stdout.decode()
    except UnicodeDecodeError:
        text = out.stdout.decode("latin-1")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise LaunchError(f"{argv[0]} printed no valid JSON ({err.msg})") from err
    _LIST_CACHE[key] = doc
    return doc


def merged_variables(mpi: str, library: str | None = None) -> dict[str, Any]:
    """The variables known before and after MPI_Init, by name (Open MPI closes unused components
    in MPI_Init, MPICH registers everything at once). Each variable says when it is known. With
    library, those of that MPI library (the job's) rather than of the one the lister was built with."""
    before = list_variables(mpi, init=False, library=library)
    after = list_variables(mpi, init=True, library=library)
    out: dict[str, Any] = {"library": after["library"], "cvars": [], "pvars": []}
    for kind in ("cvars", "pvars"):
        seen: dict[str, dict[str, Any]] = {}
        for v in after[kind]:
            seen.setdefault(v["name"] + "|" + v.get("class", ""), dict(v, after_init=True))
        for v in before[kind]:
            k = v["name"] + "|" + v.get("class", "")
            if k not in seen:
                seen[k] = dict(v, after_init=False)
        out[kind] = sorted(seen.values(), key=lambda v: v["name"])
    return out


def short_library(lib: str) -> str:
    """"Open MPI v4.1.4" or "MPICH 4.0.2 (ch4:ucx)" from an MPI library version string."""
    m = re.search(r"MPICH Version:\s*(\S+)", lib)
    if m:
        dev = re.search(r"Device:\s*(\S+)", lib)
        return f"MPICH {m.group(1)}" + (f" ({dev.group(1)})" if dev else "")
    return lib.split(",")[0].strip().splitlines()[0] if lib.strip() else "unknown MPI"


# ------------------------------------------------------------------------------------- a run
@dataclass
class Series:
    """One pvar handle of one rank: its samples (value: number, or per-element list)."""

    rank: int
    name: str
    cls: str
    bind: str
    comm: str | None
    count: int
    t: list[float] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    region: list[str | None] = field(default_factory=list)
    v: list[Any] = field(default_factory=list)

    def totals(self) -> list[float | None]:
        """Each sample as one number (the sum over elements for per-peer arrays)."""
        return [None if x is None else float(sum(x) if isinstance(x, list) else x) for x in self.v]

    def maxima(self) -> list[float | None]:
        """Each sample as one number: the largest element of per-peer arrays (0 for an empty one)."""
        return [None if x is None else float(max(x) if isinstance(x, list) and x else x if not isinstance(x, list) else 0)
                for x in self.v]


@dataclass
class MpitRun:
    """What a run directory holds about MPI_T."""

    path: Path
    mpi: str | None                 # openmpi | mpich (from meta.json)
    library: str
    cvars_set: list[dict[str, Any]]
    recorded: bool                  # mpit mode was on (mpit/ exists)
    pvars_total: int | None         # pvars the MPI exposed (rank 0)
    regex: str
    series: list[Series]
    skipped: list[dict[str, str]]
    problems: list[str]

    def names(self) -> list[str]:
        """Names of the pvars recorded, sorted."""
        return sorted({s.name for s in self.series})

    def by_name(self, name: str) -> list[Series]:
        """Every series (rank, handle) of one pvar."""
        return [s for s in self.series if s.name == name]

    def has(self, name: str) -> bool:
        """Whether a pvar was recorded with at least one value."""
        return any(s.name == name and any(v is not None for v in s.v) for s in self.series)


def load(path: str | Path, meta: dict[str, Any] | None = None) -> MpitRun:
    """Read meta.json's cvars and the mpit/ series of a run directory."""
    path = Path(path)
    problems: list[str] = []
    if meta is None:
        wrong: list[str] = []
        meta = meta_file.load(path, wrong)
        if meta is None:
            raise RunDirectoryError(f"{path}: {wrong[0]}" + (" (not an mpilens run directory?)"
                                                             if "missing" in wrong[0] else ""))
        problems += wrong
    mpi = (meta.get("mpi") or {}).get("flavor")
    series: list[Series] = []
    skipped: list[dict[str, str]] = []
    pvars_total: int | None = None
    regex = ""
    mdir = layout.mpit_dir(path)
    for f in layout.mpit_files(path):
        handles: dict[int, Series] = {}
        rank = layout.rank_of("mpit", f) or 0
        ended = False
        try:
            text = layout.read_regular(f).decode("utf-8", "replace")
        except (OSError, RunDirectoryError) as err:
            problems.append(str(err) if isinstance(err, RunDirectoryError) else f"{mdir.name}/{f.name}: cannot "
                            f"read ({err.strerror}); rank {rank}'s pvars are left out")
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
            except ValueError:
                problems.append(f"{mdir.name}/{f.name} line {lineno} is damaged (the rank may have been killed); "
                                "later samples of this rank are ignored")
                break
            if "schema" in rec:
                rank = rec.get("rank", rank)
                if rank == 0 or pvars_total is None:
                    pvars_total = rec.get("pvars_total")
                    regex = rec.get("regex", "")
            elif "var" in rec:
                s = Series(rank, rec["name"], rec["class"], rec["bind"], rec.get("comm"), rec["count"])
                handles[rec["var"]] = s
                series.append(s)
            elif "skipped" in rec:
                if rank == 0:
                    skipped.append({"name": rec["skipped"], "reason": rec.get("reason", "")})
            elif "t" in rec:
                vals = rec.get("v", [])
                for k, s in handles.items():
                    if k < len(vals):
                        s.t.append(rec["t"])
                        s.why.append(rec.get("why", ""))
                        s.region.append(rec.get("region"))
                        s.v.append(vals[k])
            elif rec.get("end"):
                ended = True
        if not ended:
            problems.append(f"{mdir.name}/{f.name} has no end record (rank {rank} did not reach MPI_Finalize)")
    return MpitRun(path=path, mpi=mpi, library=(meta.get("mpi") or {}).get("library", ""),
                   cvars_set=list(meta.get("cvars_set") or []), recorded=mdir.is_dir(), pvars_total=pvars_total,
                   regex=regex, series=series, skipped=skipped, problems=problems)


def group_skipped(skipped: list[dict[str, str]]) -> dict[str, list[str]]:
    """Skipped pvars by reason."""
    out: dict[str, list[str]] = {}
    for s in skipped:
        out.setdefault(s["reason"], []).append(s["name"])
    return out


def series_summary(m: MpitRun) -> list[dict[str, Any]]:
    """One row per variable (and communicator): ranks, samples, first/last/max over ranks."""
    rows: dict[tuple[str, str | None], dict[str, Any]] = {}
    for s in m.series:
        key = (s.name, s.comm)
        r = rows.setdefault(key, {"name": s.name, "class": s.cls, "bind": s.bind, "communicator": s.comm,
                                  "ranks": 0, "samples": 0, "max": None, "last_sum": 0.0, "readable": False})
        vals = [v for v in s.totals() if v is not None]
        r["ranks"] += 1
        r["samples"] += len(vals)
        if vals:
            r["readable"] = True
            peak = max(v for v in s.maxima() if v is not None)
            r["max"] = peak if r["max"] is None else max(r["max"], peak)
            r["last_sum"] += vals[-1]
    return list(rows.values())
