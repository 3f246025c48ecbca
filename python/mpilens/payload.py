"""The profile of the per-rank payload files of a run that did not reach MPI_Finalize
(ranks/rank-NNNNNN.partial) or of an MPI_Pcontrol snapshot (pcontrol/NNNN/rank-NNNNNN.bin).

They are merged by mpilens.merge, the Python port of the merge rank 0 runs at MPI_Finalize
(runtime/src/core/merge.c), so a partial profile has exactly the keys and values a complete one would
have, with no compiler and no build of the runtime. The payload's layout is in
runtime/spec/rundir.yaml (docs/run-directory.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import layout
from .errors import RunDirectoryError
from .merge import merge_buffers
from .recover import Recovered


def merge(files: list[layout.RankFile | Recovered], root: Path, nranks: int | None = None, time_sample: int = 1,
          intervals: bool = False, version: str | None = None,
          mpi: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """Merge payload files into a profile.json document (a rank's payload in a container, of
    MPILENS_FILES=host, or recovered from its statistics file is merged from its bytes).

    Returns (profile, problems): profile is None when no file could be used; problems names each
    file that could not be, relative to root, with what is wrong with it.
    """
    if not files:
        return None, []
    items: list[tuple[str, bytes | OSError]] = []
    refused: list[str] = []
    for f in files:
        if isinstance(f, (layout.Member, Recovered)):
            try:
                data: bytes | OSError = f.read_bytes()
            except RunDirectoryError as err:  # a container that is not what its index says
                return None, [str(err)]
            name = f.name if isinstance(f, Recovered) or str(f.container).startswith(str(root)) else str(f)
            items.append((name, data))
            continue
        try:  # only regular files are read: a FIFO would hang the reader, a device never end
            fd = layout.open_regular(f)
        except (RunDirectoryError, OSError) as err:
            refused.append(str(err) if isinstance(err, RunDirectoryError) else f"{f.name}: cannot read ({err.strerror})")
            continue
        try:
            with os.fdopen(fd, "rb") as stream:
                data = stream.read()
        except OSError as err:
            data = err
        items.append((str(f.relative_to(root) if f.is_relative_to(root) else f), data))
    if not items:
        return None, refused
    try:
        profile, problems = merge_buffers(items, nranks=nranks or None, time_sample=max(time_sample, 1),
                                          intervals=intervals, version=version or None, mpi=mpi or None)
    except ValueError as err:
        raise RunDirectoryError(f"cannot merge the payloads: {err}") from None
    out = refused
    for name, why in problems:
        if name is None:  # the merge's own complaint, not a file's
            out.append(why)
        else:
            out.append(f"{name}: {why}" if why.startswith("cannot read") else f"{name} is damaged: {why}")
    return profile, out
