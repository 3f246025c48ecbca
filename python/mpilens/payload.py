"""The profile of the per-rank payload files of a run that did not reach MPI_Finalize
(ranks/rank-NNNNNN.partial) or of an MPI_Pcontrol snapshot (pcontrol/NNNN/rank-NNNNNN.bin).

They are merged by mpilens-merge, which runs the same merge (runtime/src/merge.c) as rank 0 at
MPI_Finalize, so a partial profile has exactly the keys and values a complete one would have. The
payload's layout is in runtime/spec/rundir.yaml (docs/run-directory.md)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from . import layout
from .build_info import merge_program
from .errors import RunDirectoryError
from .recover import Recovered


def merge(files: list[layout.RankFile | Recovered], root: Path, nranks: int | None = None, time_sample: int = 1,
          intervals: bool = False, version: str | None = None,
          mpi: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """Merge payload files into a profile.json document (a rank's payload in a container, of
    MPILENS_FILES=host, or recovered from its statistics file is copied out for mpilens-merge first).

    Returns (profile, problems): profile is None when no file could be used; problems names each
    file that could not be, relative to root, with what is wrong with it.
    """
    if not files:
        return None, []
    if any(isinstance(f, (layout.Member, Recovered)) for f in files):
        with tempfile.TemporaryDirectory(prefix="mpilens-merge-") as tmp:
            copies: list[Path] = []
            names: dict[str, str] = {}
            for i, f in enumerate(files):
                if isinstance(f, (layout.Member, Recovered)):
                    copy = Path(tmp) / f"{i:06d}.payload"
                    try:
                        copy.write_bytes(f.read_bytes())
                    except RunDirectoryError as err:
                        return None, [str(err)]
                    names[str(copy)] = (f.name if isinstance(f, Recovered) or str(f.container).startswith(str(root))
                                        else str(f))
                    copies.append(copy)
                else:
                    copies.append(f)
            profile, problems = merge(copies, Path(tmp), nranks, time_sample, intervals, version, mpi)
            return profile, [_rename(p, Path(tmp), names) for p in problems]
    kept, refused = [], []
    for f in files:  # only regular files reach the merge: a FIFO would hang it, a device never end
        try:
            os.close(layout.open_regular(f))
            kept.append(f)
        except (RunDirectoryError, OSError) as err:
            refused.append(str(err) if isinstance(err, RunDirectoryError) else f"{f.name}: cannot read ({err.strerror})")
    if not kept:
        return None, refused
    files = kept
    cmd = [str(merge_program())]
    if nranks:
        cmd += ["--nranks", str(nranks)]
    if time_sample > 1:
        cmd += ["--time-sample", str(time_sample)]
    if intervals:
        cmd.append("--intervals")
    if version:
        cmd += ["--version", version]
    if mpi:
        cmd += ["--mpi", mpi]
    p = subprocess.run(cmd + ["--"] + [str(f) for f in files], capture_output=True, text=True, check=False)
    problems = refused
    for line in p.stderr.splitlines():  # "FILE: what is wrong", FILE one of ours (a path may hold ": ")
        f = next((f for f in files if line.startswith(f"{f}: ")), None)
        if f is None:  # the program's own complaint (out of memory, ...)
            problems.append(line)
            continue
        name, why = f.relative_to(root) if f.is_relative_to(root) else f, line[len(str(f)) + 2:]
        problems.append(f"{name}: {why}" if why.startswith("cannot read") else f"{name} is damaged: {why}")
    if p.returncode == 2:
        return None, problems
    if p.returncode != 0:
        raise RunDirectoryError(f"mpilens-merge failed ({p.returncode}): {p.stderr.strip()}")
    try:
        return json.loads(p.stdout), problems
    except json.JSONDecodeError as err:  # a defect of mpilens-merge, not of the run directory
        raise RunDirectoryError(f"mpilens-merge wrote no valid JSON ({err})") from err


def _rename(problem: str, tmp: Path, names: dict[str, str]) -> str:
    """A problem of a copied-out payload, naming the rank's file in its container instead."""
    for copy, name in names.items():
        rel = str(Path(copy).relative_to(tmp))
        if problem.startswith(rel):
            return name + problem[len(rel):]
    return problem
