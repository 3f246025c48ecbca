"""Read a run directory: meta.json, profile.json, and the per-rank files of ranks that ended
without MPI_Finalize. Damaged files become problems named in the result, not tracebacks; whatever
is still readable is returned."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _layout, claim, layout, recover
from . import meta as meta_file
from . import payload as pl
from ._layout import MatrixEntryKeys, Profile, ProfileKeys, RankKeys, RegionKeys, profile_from_json
from .errors import RunDirectoryError

SCHEMA = _layout.SCHEMA_PROFILE
PROFILE_SOURCE = "profile.json"  # Run.source of a run read from its aggregated profile


def function_keys() -> tuple[str, ...]:
    """A function's fields every profile.json has (runtime/spec/rundir.yaml: profile_function_fields;
    read from the spec's list when asked, never copied)."""
    return tuple(key for key, _, _, when in _layout.PROFILE_FUNCTION_FIELDS if when is None)


@dataclass
class Run:
    """A run directory as read: metadata, the profile, and what was wrong with the files."""

    path: Path
    meta: dict[str, Any] | None
    profile: dict[str, Any]
    source: str  # PROFILE_SOURCE ("profile.json"), "per-rank files" or "MPI_Pcontrol snapshot N"
    problems: list[str] = field(default_factory=list)
    snapshot: int | None = None  # N when this is the N-th MPI_Pcontrol(3|4) snapshot, not the whole run

    @functools.cached_property
    def typed_profile(self) -> Profile:
        """The profile as typed objects (mpilens._layout.Profile, generated from the spec: a field
        per key); ProfileShapeError where a value is not of its spec's type (load() has named what
        it found wrong in `problems`; a run it could read follows the spec)."""
        return profile_from_json(self.profile)

    @property
    def complete(self) -> bool:
        """Whether every rank reached MPI_Finalize and the profile was aggregated."""
        return bool(self.profile.get(ProfileKeys.COMPLETE)) and self.source == PROFILE_SOURCE

    # What the directory holds, and each family read lazily through its one reader (cached on first
    # use; a reader's RunDirectoryError is raised again on each use, not cached). The per-rank files
    # cover the whole run, also for a Run of an MPI_Pcontrol snapshot.
    @functools.cached_property
    def modes(self) -> frozenset[str]:
        """The modes whose data the directory holds, from the files present: some of profile,
        trace, counters, memory, mpit, papi, intervals, io, partial (ranks that left a payload without
        MPI_Finalize's aggregation) and snapshots (MPI_Pcontrol(3|4)). See configured_modes."""
        return layout.modes(self.path)

    @property
    def configured_modes(self) -> frozenset[str]:
        """The modes the run was started with, from meta.json's config (MPILENS_MODE, and
        intervals for MPILENS_INTERVALS=1); empty when meta.json is missing."""
        config = (self.meta or {}).get("config") or {}
        names = {m.strip() for m in str(config.get("MPILENS_MODE") or "").split(",") if m.strip()}
        if _switched_on(config, "MPILENS_INTERVALS"):
            names.add("intervals")
        return frozenset(names)

    @property
    def missing_modes(self) -> frozenset[str]:
        """Modes the run was started with whose data the directory does not hold."""
        return self.configured_modes - self.modes

    @property
    def snapshots(self) -> list[int]:
        """Numbers of the MPI_Pcontrol(3|4) snapshots the directory holds."""
        return layout.snapshot_numbers(self.path)

    @functools.cached_property
    def unmeasured(self) -> list[dict[str, str]]:
        """The MPI functions the program or its libraries call that mpilens did not measure, from
        imports.json (written by `mpilens run`): [{"name", "object", "why"}]; empty without it. A
        damaged file is one of the run's problems."""
        doc = layout.read_json(layout.imports_file(self.path), self.problems)
        if doc is None:
            return []
        try:
            return [{"name": str(u["name"]), "object": str(o["path"]), "why": str(u["why"])}
                    for o in doc["objects"] for u in o["unmeasured"]]
        except (KeyError, TypeError):
            self.problems.append(f"{layout.imports_file(self.path).name} is not an {_layout.SCHEMA_IMPORTS} document")
            return []

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The other MPI tools the calls passed through, from meta.json (binding.c): [{"object",
        "position" ("before" or "after" mpilens), "functions"}]; empty when there were none."""
        return list((self.meta or {}).get("tools") or [])

    @functools.cached_property
    def trace(self) -> Any:
        """The trace of every rank as one mpilens.trace.timeline.Timeline (RunDirectoryError without one)."""
        from .trace import timeline

        return timeline.load(self.path)

    @functools.cached_property
    def memory(self) -> Any:
        """Memory mode's data, a mpilens.memory.MemoryRun (RunDirectoryError without it)."""
        from . import memory

        return memory.load(self.path)

    @functools.cached_property
    def counters(self) -> Any:
        """Counters mode's data, a mpilens.counters_spc.Counters (RunDirectoryError without it)."""
        from . import counters_spc

        return counters_spc.load(self.path)

    @functools.cached_property
    def mpit(self) -> Any:
        """What the run holds about MPI_T (cvars set, mpit mode's series), a mpilens.mpit.MpitRun."""
        from . import mpit

        return mpit.load(self.path, self.meta or {})

    @functools.cached_property
    def papi(self) -> Any:
        """PAPI mode's counts, a mpilens.papi.PapiRun (RunDirectoryError without them)."""
        from . import papi

        return papi.load(self.path)

    @functools.cached_property
    def intervals(self) -> Any:
        """The MPILENS_INTERVALS data, a mpilens.intervals.Intervals (RunDirectoryError without it)."""
        from . import intervals

        return intervals.load(self.path)

    @functools.cached_property
    def io(self) -> Any:
        """I/O per file (MPILENS_IO), a mpilens.io.IORun (RunDirectoryError when no rank opened a file)."""
        from . import io

        return io.load(self.path)


def _switched_on(config: dict[str, Any], name: str) -> bool:
    """Whether a boolean setting was on in the run: meta.json records the value the runtime parsed,
    "1" or "0"."""
    return str(config.get(name, "0")).strip() not in ("", "0")


def validate_profile(doc: Any) -> list[str]:
    """Return what is wrong with a parsed profile.json (empty when it is usable)."""
    if not isinstance(doc, dict):
        return ["profile.json is not a JSON object"]
    errs = []
    P = ProfileKeys
    if doc.get(P.SCHEMA) != SCHEMA:
        errs.append(f"profile.json has {P.SCHEMA} {doc.get(P.SCHEMA)!r}, expected {SCHEMA!r}")
    n = doc.get(P.NRANKS)
    if not isinstance(n, int) or n < 1:
        return errs + [f"profile.json: {P.NRANKS} is missing or not a positive integer"]
    ranks = doc.get(P.RANKS)
    if not isinstance(ranks, list) or len(ranks) != n:
        errs.append(f"profile.json: {P.RANKS} should list {n} ranks")
    funcs = doc.get(P.FUNCTIONS)
    if not isinstance(funcs, dict):
        errs.append(f"profile.json: {P.FUNCTIONS} is missing")
    else:
        for name, f in funcs.items():
            for k in function_keys():
                if not isinstance(f, dict) or not isinstance(f.get(k), list) or len(f[k]) != n:
                    errs.append(f"profile.json: {P.FUNCTIONS}.{name}.{k} should have {n} values")
                    break
    for key, kind in ((P.MATRIX, list), (P.REGIONS, list), (P.MESSAGE_SIZES, dict)):
        if not isinstance(doc.get(key), kind):
            errs.append(f"profile.json: {key} is missing")
    return errs


def _measured(v: Any) -> bool:
    """A per-rank value as the runtime writes it: null (not measured) or a number >= 0."""
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 and v == v)


def check_values(doc: dict[str, Any], problems: list[str]) -> None:
    """Leave out the values of a structurally valid profile that no run writes (a negative time, a
    string for a count, a message from rank 99 in a run of 4): each becomes "not measured" (or
    its matrix entry is dropped), and problems says which. A damaged file never passes as data."""
    n = doc[ProfileKeys.NRANKS]

    def scrub(where: str, values: list[Any]) -> None:
        bad = [i for i, v in enumerate(values) if not _measured(v)]
        for i in bad:
            values[i] = None
        if bad:
            problems.append(f"profile.json: {where} has values no run writes at rank{'s' if len(bad) > 1 else ''} "
                            f"{', '.join(map(str, bad[:8]))}{', ...' if len(bad) > 8 else ''} (left out)")

    def walk_functions(prefix: str, funcs: Any) -> None:
        for name, f in (funcs or {}).items() if isinstance(funcs, dict) else []:
            for k, v in f.items() if isinstance(f, dict) else []:
                if isinstance(v, list) and len(v) == n:
                    scrub(f"{prefix}{ProfileKeys.FUNCTIONS}.{name}.{k}", v)

    walk_functions("", doc[ProfileKeys.FUNCTIONS])

    def walk_regions(prefix: str, regions: Any) -> None:
        for r in regions if isinstance(regions, list) else []:
            if not isinstance(r, dict):
                continue
            where = f"{prefix}{ProfileKeys.REGIONS}.{r.get(RegionKeys.NAME)!s}."
            for k in (RegionKeys.VISITS, RegionKeys.TIME_S):
                if isinstance(r.get(k), list) and len(r[k]) == n:
                    scrub(where + k, r[k])
            walk_functions(where, r.get(RegionKeys.FUNCTIONS))
            walk_regions(where, r.get(RegionKeys.REGIONS))

    walk_regions("", doc[ProfileKeys.REGIONS])
    timed = [key for key, _, how, _ in _layout.PROFILE_RANK_FIELDS if how == "seconds"]
    for r in doc[ProfileKeys.RANKS]:
        for k in timed:
            if isinstance(r, dict) and not _measured(r.get(k)):
                problems.append(f"profile.json: rank {r.get(RankKeys.RANK)!s}'s {k} is {r.get(k)!r} (left out)")
                r[k] = None

    M = MatrixEntryKeys

    def entry_ok(e: Any) -> bool:
        return (isinstance(e, dict) and all(isinstance(e.get(k), int) and not isinstance(e.get(k), bool)
                                            for k in (M.SRC, M.DST, M.MESSAGES, M.BYTES))
                and 0 <= e[M.SRC] < n and 0 <= e[M.DST] < n and e[M.MESSAGES] >= 0 and e[M.BYTES] >= 0)

    bad = [e for e in doc[ProfileKeys.MATRIX] if not entry_ok(e)]
    if bad:
        doc[ProfileKeys.MATRIX] = [e for e in doc[ProfileKeys.MATRIX] if entry_ok(e)]
        problems.append(f"profile.json: {len(bad)} {ProfileKeys.MATRIX} entr{'ies' if len(bad) > 1 else 'y'} "
                        f"with ranks outside 0-{n - 1} "
                        f"or negative counts (left out), e.g. {json.dumps(bad[0])[:120]}")


def load(path: str | Path) -> Run:
    """Read a run directory; raise RunDirectoryError when it holds nothing usable."""
    path = Path(path)
    if not path.exists():
        raise RunDirectoryError(f"{path}: no such run directory")
    if not path.is_dir():
        raise RunDirectoryError(f"{path}: not a run directory (expected a directory with profile.json)")
    problems: list[str] = []
    meta = meta_file.load(path, problems)

    profile_file = layout.profile_file(path)
    doc = layout.read_json(profile_file, problems)
    if doc is not None:
        errs = validate_profile(doc)
        if not errs:
            check_values(doc, problems)
            return Run(path, meta, doc, PROFILE_SOURCE, problems)
        problems += errs

    partials = layout.partial_files(path)
    have = {r for r in (layout.rank_of("partial", f) for f in partials) if r is not None}
    recovered = recover.recover(path, have, problems)  # ranks that ended without a word (SIGKILL, ...)
    nranks, profile, missing = _aggregate(path, [*partials, *recovered], meta, problems)
    running = claim.still_running(path)
    if profile is None:
        if running is not None:
            why = f"the job is still running (pid {running} on this host): no profile.json yet and no per-rank data"
        elif not profile_file.exists():
            why = "no profile.json (the job did not reach MPI_Finalize, or it could not be written) and no per-rank data"
        else:
            why = "profile.json is unusable and there is no per-rank data"
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise RunDirectoryError(f"{path}: {why}{detail}")
    if recovered:
        problems += _recovered_note(recovered, running is not None, (meta or {}).get("started_by") or "MPI_Init")
    problems.append(f"incomplete run: {nranks - len(missing)} of {nranks} ranks left data"
                    + (f" (missing: {_ranges(missing)}, which left no file at all: they did not get through "
                       "MPI_Init under mpilens, or ran on a host whose files are not in this directory)"
                       if missing else "")
                    + (f"; the job is still running (pid {running} on this host)" if running is not None
                       else "; no profile was written" if recovered and all(r.finalizing for r in recovered)
                       else "; the job did not reach MPI_Finalize"))
    return Run(path, meta, profile, "per-rank files", problems)


def _recovered_note(recovered: list[recover.Recovered], running: bool, start: str = "MPI_Init") -> list[str]:
    """What the report says of the ranks recovered from their statistics files (their times counted
    from start: MPI_Init, or MPI_Session_init in a program of Sessions only)."""
    rs = sorted(recovered, key=lambda r: r.rank)
    one = len(rs) == 1
    when = ", ".join((f"rank {r.rank} " if not one else "") + (f"at {r.last_s:.3g} s" if r.last_s is not None
                                                                   else "at an unknown time") for r in rs)
    who = f"rank{'' if one else 's'} {_ranges([r.rank for r in rs])}"
    where = rs[0].name if one else layout.describe("stats")
    if running:
        head = f"{who} wrote nothing yet (the job is running): {'its' if one else 'their'} statistics so far"
    elif all(r.finalizing for r in rs):
        head = (f"{who} reached MPI_Finalize but no profile was written (the file system was full, or the job "
                f"was killed while mpilens merged it): {'its' if one else 'their'} statistics")
    else:
        head = (f"{who} ended without writing anything (killed: SIGKILL, the OOM killer, a time limit or the "
                f"launcher): {'its' if one else 'their'} statistics up to {'its' if one else 'their'} last counted call")
    out = [f"{head} ({when} after {start}) are recovered from {where}"]
    finalizing = [r.rank for r in rs if r.finalizing]
    if finalizing:
        out.append(f"rank{'' if len(finalizing) == 1 else 's'} {_ranges(finalizing)} ended in MPI_Finalize, while "
                   "mpilens gathered and merged the profile: every call before MPI_Finalize is counted")
    inside = [r.rank for r in rs if r.inside_call and not r.finalizing]
    if inside:
        out.append(f"rank{'' if len(inside) == 1 else 's'} {_ranges(inside)} ended inside an MPI call "
                   "(that call is not counted)")
    counting = [r.rank for r in rs if r.counting]
    if counting:
        out.append(f"rank{'' if len(counting) == 1 else 's'} {_ranges(counting)} ended while counting an MPI call "
                   "that had returned (it may be counted in part)")
    for r in rs:
        if r.threads_unkept:
            out.append(f"rank {r.rank}: {r.threads_unkept} of its threads counted in memory only (the file system "
                       "could not hold their statistics): their calls are not in what was recovered")
        if r.given_up_s is not None:
            out.append(f"rank {r.rank}: the file system could not hold its statistics after {r.given_up_s:.3g} s "
                       "(those of later calls are lost)")
    return out


def _aggregate(path: Path, files: list[Any], meta: dict[str, Any] | None,
               problems: list[str]) -> tuple[int, dict[str, Any] | None, list[int]]:
    """The profile of per-rank payload files of run directory `path`, merged by merge.py:
    (ranks in the job, profile or None when no file is usable, ranks without data)."""
    config = (meta or {}).get("config") or {}
    try:  # the settings the run used, as meta.json recorded them
        time_sample = int(config.get("MPILENS_TIME_SAMPLE", 1))
    except (TypeError, ValueError):
        time_sample = 1
    tool, mpi = (meta or {}).get("tool") or {}, (meta or {}).get("mpi") or {}
    profile, bad = pl.merge(files, path, nranks=(meta or {}).get("nranks"), time_sample=time_sample,
                            intervals=_switched_on(config, "MPILENS_INTERVALS"),
                            version=tool.get("version") if isinstance(tool, dict) else None,
                            mpi=mpi.get("flavor") if isinstance(mpi, dict) else None)
    problems += bad
    if profile is None:
        return 0, None, []
    nranks = int(profile[ProfileKeys.NRANKS])
    return nranks, profile, [r[RankKeys.RANK] for r in profile[ProfileKeys.RANKS] if r[RankKeys.HOST] is None]


def snapshots(path: str | Path) -> list[int]:
    """Numbers of the MPI_Pcontrol(3|4) snapshots a run directory holds (pcontrol/NNNN/)."""
    return layout.snapshot_numbers(path)


def load_snapshot(path: str | Path, number: int) -> Run:
    """The statistics as of each rank's number-th MPI_Pcontrol(3) or (4) call (mpiP's intermediate
    reports), aggregated over the ranks that wrote that snapshot.

    Raises:
        RunDirectoryError: no such snapshot, or none of its files is readable.
    """
    path = Path(path)
    if not path.is_dir():
        raise RunDirectoryError(f"{path}: no such run directory")
    folder = layout.snapshot_dir(path, number)
    have = snapshots(path)
    if not folder.is_dir():
        which = f"it has {', '.join(map(str, have))}" if have else "the program never called MPI_Pcontrol(3) or (4)"
        raise RunDirectoryError(f"{path}: no MPI_Pcontrol snapshot {number} ({which})")
    problems: list[str] = []
    meta = meta_file.load(path, problems)
    _, profile, missing = _aggregate(path, layout.snapshot_files(path, number), meta, problems)
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
