"""Read a run directory: meta.json, profile.json, and the per-rank files of ranks that ended
without MPI_Finalize. Damaged files become problems named in the result, not tracebacks; whatever
is still readable is returned."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import payload as pl
from .errors import RunDirectoryError

SCHEMA = "mpilens.profile/1"
FUNCTION_KEYS = ("calls", "time_s", "min_s", "max_s", "bytes_sent", "bytes_recv")


@dataclass
class Run:
    """A run directory as read: metadata, the profile, and what was wrong with the files."""

    path: Path
    meta: dict[str, Any] | None
    profile: dict[str, Any]
    source: str  # "profile.json", "per-rank files" or "MPI_Pcontrol snapshot N"
    problems: list[str] = field(default_factory=list)
    snapshot: int | None = None  # N when this is the N-th MPI_Pcontrol(3|4) snapshot, not the whole run

    @property
    def complete(self) -> bool:
        """Whether every rank reached MPI_Finalize and the profile was aggregated."""
        return bool(self.profile.get("complete")) and self.source == "profile.json"


def _load_json(path: Path, problems: list[str]) -> Any:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as err:
        problems.append(f"{path.name}: cannot read ({err.strerror})")
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        # mpilens writes its JSON files whole (temporary file, then rename): one that does not end
        # with its closing brace was cut short, e.g. copied while being written or by a full disk
        cut = "; the file is truncated" if not text.rstrip().endswith(("}", "]")) else ""
        problems.append(f"{path.name} is damaged: {err.msg} (line {err.lineno}, column {err.colno}){cut}")
        return None


def validate_profile(doc: Any) -> list[str]:
    """Return what is wrong with a parsed profile.json (empty when it is usable)."""
    if not isinstance(doc, dict):
        return ["profile.json is not a JSON object"]
    errs = []
    if doc.get("schema") != SCHEMA:
        errs.append(f"profile.json has schema {doc.get('schema')!r}, expected {SCHEMA!r}")
    n = doc.get("nranks")
    if not isinstance(n, int) or n < 1:
        return errs + ["profile.json: nranks is missing or not a positive integer"]
    ranks = doc.get("ranks")
    if not isinstance(ranks, list) or len(ranks) != n:
        errs.append(f"profile.json: ranks should list {n} ranks")
    funcs = doc.get("functions")
    if not isinstance(funcs, dict):
        errs.append("profile.json: functions is missing")
    else:
        for name, f in funcs.items():
            for k in FUNCTION_KEYS:
                if not isinstance(f, dict) or not isinstance(f.get(k), list) or len(f[k]) != n:
                    errs.append(f"profile.json: functions.{name}.{k} should have {n} values")
                    break
    for key, kind in (("matrix", list), ("regions", list), ("message_sizes", dict)):
        if not isinstance(doc.get(key), kind):
            errs.append(f"profile.json: {key} is missing")
    return errs


def load(path: str | Path) -> Run:
    """Read a run directory; raise RunDirectoryError when it holds nothing usable."""
    path = Path(path)
    if not path.exists():
        raise RunDirectoryError(f"{path}: no such run directory")
    if not path.is_dir():
        raise RunDirectoryError(f"{path}: not a run directory (expected a directory with profile.json)")
    problems: list[str] = []
    meta = _load_json(path / "meta.json", problems)
    if meta is not None and not isinstance(meta, dict):
        problems.append("meta.json is not a JSON object")
        meta = None
    if meta is None and not (path / "meta.json").exists():
        problems.append("meta.json is missing")

    doc = _load_json(path / "profile.json", problems)
    if doc is not None:
        errs = validate_profile(doc)
        if not errs:
            return Run(path, meta, doc, "profile.json", problems)
        problems += errs

    nranks, profile, missing = _aggregate(path, "ranks/rank-*.partial", meta, problems)
    if profile is None:
        if not (path / "profile.json").exists():
            why = "no profile.json (the job did not reach MPI_Finalize) and no per-rank data"
        else:
            why = "profile.json is unusable and there is no per-rank data"
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise RunDirectoryError(f"{path}: {why}{detail}")
    problems.append(f"incomplete run: {nranks - len(missing)} of {nranks} ranks left data"
                    + (f" (missing: {_ranges(missing)})" if missing else "")
                    + "; the job did not reach MPI_Finalize")
    return Run(path, meta, profile, "per-rank files", problems)


def _aggregate(path: Path, pattern: str, meta: dict[str, Any] | None,
               problems: list[str]) -> tuple[int, dict[str, Any] | None, list[int]]:
    """The profile of the payload files matching pattern (relative to the run directory), merged by
    mpilens-merge: (ranks in the job, profile or None when no file is usable, ranks without data)."""
    files = sorted(path.glob(pattern))
    config = (meta or {}).get("config") or {}
    try:  # the settings the run used, as meta.json recorded them
        time_sample = int(config.get("MPILENS_TIME_SAMPLE", 1))
    except (TypeError, ValueError):
        time_sample = 1
    tool, mpi = (meta or {}).get("tool") or {}, (meta or {}).get("mpi") or {}
    profile, bad = pl.merge(files, path, nranks=(meta or {}).get("nranks"), time_sample=time_sample,
                            intervals=str(config.get("MPILENS_INTERVALS", "0")).lower() in ("1", "true", "yes", "on"),
                            version=tool.get("version") if isinstance(tool, dict) else None,
                            mpi=mpi.get("flavor") if isinstance(mpi, dict) else None)
    problems += bad
    if profile is None:
        return 0, None, []
    nranks = int(profile["nranks"])
    return nranks, profile, [r["rank"] for r in profile["ranks"] if r["host"] is None]


def snapshots(path: str | Path) -> list[int]:
    """Numbers of the MPI_Pcontrol(3|4) snapshots a run directory holds (pcontrol/NNNN/)."""
    folder = Path(path) / "pcontrol"
    return sorted(int(d.name) for d in folder.iterdir() if d.is_dir() and d.name.isdigit()) if folder.is_dir() else []


def load_snapshot(path: str | Path, number: int) -> Run:
    """The statistics as of each rank's number-th MPI_Pcontrol(3) or (4) call (mpiP's intermediate
    reports), aggregated over the ranks that wrote that snapshot.

    Raises:
        RunDirectoryError: no such snapshot, or none of its files is readable.
    """
    path = Path(path)
    if not path.is_dir():
        raise RunDirectoryError(f"{path}: no such run directory")
    folder = path / "pcontrol" / f"{number:04d}"
    have = snapshots(path)
    if not folder.is_dir():
        which = f"it has {', '.join(map(str, have))}" if have else "the program never called MPI_Pcontrol(3) or (4)"
        raise RunDirectoryError(f"{path}: no MPI_Pcontrol snapshot {number} ({which})")
    problems: list[str] = []
    meta = _load_json(path / "meta.json", problems)
    if not isinstance(meta, dict):
        meta = None
    _, profile, missing = _aggregate(path, f"pcontrol/{folder.name}/rank-*.bin", meta, problems)
    if profile is None:
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise RunDirectoryError(f"{folder}: no readable snapshot file{detail}")
    problems.insert(0, f"MPI_Pcontrol snapshot {number}: each rank's statistics as of its MPI_Pcontrol(3|4) call "
                       f"number {number}; the run went on"
                       + (f"; ranks {_ranges(missing)} wrote no such snapshot" if missing else ""))
    return Run(path, meta, profile, f"MPI_Pcontrol snapshot {number}", problems, snapshot=number)


def _ranges(values: list[int]) -> str:
    out: list[str] = []
    for v in values:
        if out and isinstance(out[-1], str) and out[-1].split("-")[-1] == str(v - 1):
            out[-1] = out[-1].split("-")[0] + f"-{v}"
        else:
            out.append(str(v))
    return ",".join(out)
