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
from ._layout import FunctionKeys, MatrixEntryKeys, ProfileKeys, RegionKeys, SizeBinKeys
from .callsites import callsites as _sites
from .callsites import location
from .errors import RunDirectoryError
from .rundir import Run


def function_columns() -> list[str]:
    """functions()'s columns: the region, the function, its class, the rank, then the function's
    fields every profile has, named as profile.json names them (runtime/spec/rundir.yaml)."""
    F = FunctionKeys
    return ["region", "function", F.CLASS, "rank", F.CALLS, F.TIME_S, F.MIN_S, F.MAX_S, F.BYTES_SENT, F.BYTES_RECV]


def _rows(region: str, funcs: dict[str, Any], out: list[tuple]) -> None:
    F = FunctionKeys
    for name, f in funcs.items():
        for r in range(len(f[F.CALLS])):
            out.append((region, name, f.get(F.CLASS, "other"), r, f[F.CALLS][r], f[F.TIME_S][r], f[F.MIN_S][r],
                        f[F.MAX_S][r], f[F.BYTES_SENT][r], f[F.BYTES_RECV][r]))


def _walk(nodes: list[dict[str, Any]], prefix: str, out: list[tuple]) -> None:
    for n in nodes:
        path = f"{prefix}/{n[RegionKeys.NAME]}" if prefix else n[RegionKeys.NAME]
        _rows(path, n.get(RegionKeys.FUNCTIONS, {}), out)
        _walk(n.get(RegionKeys.REGIONS, []), path, out)


def functions(run: Run, by_region: bool = False) -> pd.DataFrame:
    """Per-rank statistics of every MPI function: the whole run (region "") or, with by_region,
    the calls made directly inside each region path ("solve/halo"). Unmeasured values are NaN."""
    rows: list[tuple] = []
    if by_region:
        _walk(run.profile.get(ProfileKeys.REGIONS, []), "", rows)
    else:
        _rows("", run.profile[ProfileKeys.FUNCTIONS], rows)
    df = pd.DataFrame(rows, columns=function_columns())
    F = FunctionKeys
    return df.astype({F.CALLS: "Int64", F.BYTES_SENT: "Int64", F.BYTES_RECV: "Int64"})


def ranks(run: Run) -> pd.DataFrame:
    """One row per rank: host, wall time, MPI time, init time, threads."""
    return pd.DataFrame(run.profile[ProfileKeys.RANKS])


def matrix(run: Run) -> pd.DataFrame:
    """Point-to-point sends: src, dst (world ranks), messages, bytes."""
    M = MatrixEntryKeys
    return pd.DataFrame(run.profile[ProfileKeys.MATRIX], columns=[M.SRC, M.DST, M.MESSAGES, M.BYTES])


def message_sizes(run: Run) -> pd.DataFrame:
    """Transfers per function, size bin and rank."""
    rows = []
    B = SizeBinKeys
    for name, bins in run.profile.get(ProfileKeys.MESSAGE_SIZES, {}).items():
        for b in bins:
            for r, (c, t) in enumerate(zip(b[B.CALLS], b[B.TIME_S])):
                rows.append((name, b[B.BIN], b[B.MIN_BYTES], b[B.MAX_BYTES], r, c, t))
    return pd.DataFrame(rows, columns=["function", B.BIN, B.MIN_BYTES, B.MAX_BYTES, "rank", B.CALLS, B.TIME_S])


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
