"""A run as pandas DataFrames, for users who script their own analyses:

    import mpilens
    run = mpilens.load("myrun")
    df = mpilens.frames.functions(run)        # one row per (region, function, rank)
    df.groupby("function")["time_s"].sum().sort_values()
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from . import io
from .callsites import callsites as _sites
from .callsites import location
from .errors import RunDirectoryError
from .rundir import Run

FUNCTION_COLUMNS = ["region", "function", "class", "rank", "calls", "time_s", "min_s", "max_s", "bytes_sent",
                    "bytes_recv"]


def _rows(region: str, funcs: dict[str, Any], out: list[tuple]) -> None:
    for name, f in funcs.items():
        for r in range(len(f["calls"])):
            out.append((region, name, f.get("class", "other"), r, f["calls"][r], f["time_s"][r], f["min_s"][r],
                        f["max_s"][r], f["bytes_sent"][r], f["bytes_recv"][r]))


def _walk(nodes: list[dict[str, Any]], prefix: str, out: list[tuple]) -> None:
    for n in nodes:
        path = f"{prefix}/{n['name']}" if prefix else n["name"]
        _rows(path, n.get("functions", {}), out)
        _walk(n.get("regions", []), path, out)


def functions(run: Run, by_region: bool = False) -> pd.DataFrame:
    """Per-rank statistics of every MPI function: the whole run (region "") or, with by_region,
    the calls made directly inside each region path ("solve/halo"). Unmeasured values are NaN."""
    rows: list[tuple] = []
    if by_region:
        _walk(run.profile.get("regions", []), "", rows)
    else:
        _rows("", run.profile["functions"], rows)
    df = pd.DataFrame(rows, columns=FUNCTION_COLUMNS)
    return df.astype({"calls": "Int64", "bytes_sent": "Int64", "bytes_recv": "Int64"})


def ranks(run: Run) -> pd.DataFrame:
    """One row per rank: host, wall time, MPI time, init time, threads."""
    return pd.DataFrame(run.profile["ranks"])


def matrix(run: Run) -> pd.DataFrame:
    """Point-to-point sends: src, dst (world ranks), messages, bytes."""
    return pd.DataFrame(run.profile["matrix"], columns=["src", "dst", "messages", "bytes"])


def message_sizes(run: Run) -> pd.DataFrame:
    """Transfers per function, size bin and rank."""
    rows = []
    for name, bins in run.profile.get("message_sizes", {}).items():
        for b in bins:
            for r, (c, t) in enumerate(zip(b["calls"], b["time_s"])):
                rows.append((name, b["bin"], b["min_bytes"], b["max_bytes"], r, c, t))
    return pd.DataFrame(rows, columns=["function", "bin", "min_bytes", "max_bytes", "rank", "calls", "time_s"])


def files(run: Run) -> pd.DataFrame:
    """I/O per file (MPILENS_IO): one row per (file name as opened, rank that opened it) with the
    calls by kind, bytes, times in seconds and the file system; empty when the run did no MPI-IO.
    ``df.groupby("name")[["bytes_read", "bytes_written"]].sum()`` gives the per-file totals."""
    try:
        data = run.io
    except RunDirectoryError:
        return pd.DataFrame(columns=FILE_COLUMNS)
    rows = []
    for r in data.records:
        x = r.rec
        rows.append((r.name, r.rank, r.path, r.fs_type or None, r.mount or None, x["comm_size"], x["opens"],
                     x["closes"], x["syncs"], x["views"], x["resizes"], sum(x["reads"]), x["reads"][0] + x["reads"][1],
                     x["reads"][2] + x["reads"][3], x["reads"][1] + x["reads"][3], sum(x["writes"]),
                     x["writes"][0] + x["writes"][1], x["writes"][2] + x["writes"][3], x["writes"][1] + x["writes"][3],
                     x["bytes_read"], x["bytes_written"], x["read_s"], x["write_s"], r.meta_s,
                     *(x[f"{m}_s"] for m in io.META), x["first_open_s"], x["first_access_s"], x["last_access_s"],
                     x["last_close_s"], x["max_read_end"], x["max_write_end"]))
    return pd.DataFrame(rows, columns=FILE_COLUMNS)


FILE_COLUMNS = ["name", "rank", "path", "fs_type", "mount", "comm_size", "opens", "closes", "syncs", "set_views",
                "set_sizes", "reads", "independent_reads", "collective_reads", "nonblocking_reads", "writes",
                "independent_writes", "collective_writes", "nonblocking_writes", "bytes_read", "bytes_written",
                "read_time_s", "write_time_s", "meta_time_s", "open_time_s", "close_time_s", "sync_time_s",
                "set_view_time_s", "set_size_time_s", "first_open_s", "first_access_s", "last_access_s",
                "last_close_s", "end_of_reads", "end_of_writes"]

CALLSITE_COLUMNS = ["site", "mpi_function", "file", "line", "symbol", "module", "rank", "calls", "time_s",
                    "bytes_sent", "bytes_recv", "path"]


def callsites(run: Run) -> pd.DataFrame:
    """One row per (call site, rank): the site's number (1 = most time), MPI function, file,
    line, symbol and module of its caller, and its calls, time and bytes on that rank; `path` is
    the call path as "symbol (file:line) <- ..." from the MPI call outwards (MPILENS_CALLSITE_DEPTH
    > 1), else the symbol. Empty when the run has no call sites."""
    rows = []
    for i, s in enumerate(_sites(run), 1):
        path = " <- ".join(f"{f['symbol']} ({location(f)})" if f.get("line") else f["symbol"]
                           for f in s.get("path", [])) or s["symbol"]
        for r in range(len(s["calls"])):
            rows.append((i, s["mpi_function"], s["file"], s["line"], s["symbol"], s["module"], r, s["calls"][r],
                         s["time_s"][r], s["bytes_sent"][r], s["bytes_recv"][r], path))
    df = pd.DataFrame(rows, columns=CALLSITE_COLUMNS)
    return df.astype({"line": "Int64", "calls": "Int64", "bytes_sent": "Int64", "bytes_recv": "Int64"})
