"""meta.json as the readers use it: read only from a regular file, and checked field by field.

A damaged meta.json never stops a reader and never changes a result silently: each reader gets
the fields that are well formed (the others are dropped) and the problems that name what was
wrong, which it reports with its result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import layout

LIMIT = 64 << 20  # bytes: far above any meta.json (a host name per rank)


def _int_list(v: Any, below: int | None = None) -> bool:
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                       and (below is None or x < below) for x in v)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


# field -> whether a value is well formed (given the whole document)
CHECKS = {
    "nranks": lambda v, d: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
    "hosts": lambda v, d: _str_list(v),
    "rank_host": lambda v, d: _int_list(v, len(d["hosts"]) if _str_list(d.get("hosts")) else None)
    and (not isinstance(d.get("nranks"), int) or len(v) == d["nranks"]),
    "command": lambda v, d: _str_list(v),
    "config": lambda v, d: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "mpi": lambda v, d: isinstance(v, dict),
    "tool": lambda v, d: isinstance(v, dict),
    "modes": lambda v, d: _str_list(v),
    "finalized": lambda v, d: isinstance(v, bool),
    "started_by": lambda v, d: v in ("MPI_Init", "MPI_Session_init"),
    "tools": lambda v, d: isinstance(v, list) and all(
        isinstance(t, dict) and isinstance(t.get("object"), str) and t.get("position") in ("before", "after")
        and _str_list(t.get("functions")) for t in v),
}


def load(run_dir: str | Path, problems: list[str]) -> dict[str, Any] | None:
    """meta.json of a run directory with its malformed fields dropped, or None when it is missing
    or unreadable; what was wrong is appended to problems."""
    path = layout.meta_file(run_dir)
    doc = layout.read_json(path, problems, limit=LIMIT, missing_is_a_problem=True)
    if doc is None:
        return None
    if not isinstance(doc, dict):
        problems.append(f"{path.name} is not a JSON object")
        return None
    bad = [k for k, ok in CHECKS.items() if k in doc and not ok(doc[k], doc)]
    for k in bad:
        del doc[k]
    if bad:
        problems.append(f"{path.name}: {', '.join(bad)} malformed (left out)")
    return doc
