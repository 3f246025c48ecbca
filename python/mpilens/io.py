"""Read I/O per file (io/rank-NNNNNN.bin, written with MPILENS_IO=1, the default): per file each
rank opened with MPI_File_open, what it did to it, and the rank's first MPI-IO calls one by one.
Layout: runtime/spec/rundir.yaml, file `io`.

The ranks' records are joined by the file's name as the application opened it: a file several
ranks opened (a shared file) is one entry with per-rank detail. ``IORun.to_json()`` is the document
`mpilens io --json` prints (``{"files": [{"name", "bytes_read", "bytes_written", ...}]}``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import _layout as L
from . import layout, recover
from .errors import RunDirectoryError

SIZE_BINS = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+")
PATTERNS = ("consecutive", "sequential", "random", "unknown")
# IO_MODES order: (collective << 1) | nonblocking
MODES = ("independent_blocking", "independent_nonblocking", "collective_blocking", "collective_nonblocking")
META = ("open", "close", "sync", "set_view", "set_size")
_META_FIELDS = ("open_ns", "close_ns", "sync_ns", "view_ns", "resize_ns")


@dataclass
class RankRecord:
    """One file as one rank saw it: the io_file record (times converted to seconds, -1 to None)."""

    rank: int
    name: str
    path: str
    fs_type: str
    mount: str
    rec: dict[str, Any]

    @property
    def time_s(self) -> float:
        """Time this rank spent on the file: reads, writes and metadata."""
        return self.rec["read_s"] + self.rec["write_s"] + self.meta_s

    @property
    def meta_s(self) -> float:
        """Time in metadata calls: open, close, sync, set_view, set_size."""
        return float(sum(self.rec[f"{m}_s"] for m in META))


@dataclass
class IORun:
    """The I/O of a run: per-rank records, the accesses listed, what could not be recorded."""

    records: list[RankRecord]
    accesses: np.ndarray  # structured: rank, file (name index into names), fn, kind, t0_s, dur_s, offset, bytes
    names: list[str]      # file names by the accesses' `file` index
    functions: dict[int, dict[int, str]]  # rank -> function id -> name
    ranks: list[int]      # ranks that wrote an io file
    nranks: int
    dropped_files: dict[int, int] = field(default_factory=dict)
    dropped_accesses: dict[int, int] = field(default_factory=dict)
    incomplete: list[int] = field(default_factory=list)  # ranks whose file was written on an exit path
    problems: list[str] = field(default_factory=list)

    def by_name(self) -> dict[str, list[RankRecord]]:
        """Records grouped by file name, in the order the names were first seen (rank, then open order)."""
        out: dict[str, list[RankRecord]] = {}
        for r in sorted(self.records, key=lambda r: (r.rec["first_open_s"] is None, r.rec["first_open_s"] or 0, r.rank)):
            out.setdefault(r.name, []).append(r)
        for recs in out.values():
            recs.sort(key=lambda r: r.rank)
        return out

    def files(self) -> list[dict[str, Any]]:
        """One summary per file (see `summarize`), by first open."""
        return [summarize(name, recs) for name, recs in self.by_name().items()]

    def to_json(self) -> dict[str, Any]:
        """The document of `mpilens io --json`."""
        return {"files": self.files(), "ranks_with_io": self.ranks, "nranks": self.nranks,
                "dropped_files": sum(self.dropped_files.values()),
                "accesses_listed": int(len(self.accesses)),
                "accesses_not_listed": sum(self.dropped_accesses.values()),
                "incomplete_ranks": self.incomplete, "problems": self.problems}


def _when(ns: int) -> float | None:
    return None if ns < 0 else ns * 1e-9


def _record(raw: np.void) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    for name in L.IO_FILE_FIELDS:
        v = raw[name]
        rec[name] = v.tolist() if isinstance(v, np.ndarray) else v.item()
    for f in ("read_ns", "write_ns", "max_read_ns", "max_write_ns"):
        rec[f[:-3] + "_s"] = rec.pop(f) * 1e-9
    for m, f in zip(META, _META_FIELDS):
        rec[f"{m}_s"] = rec.pop(f) * 1e-9
    for f in ("first_open_ns", "first_access_ns", "last_access_ns", "last_close_ns"):
        rec[f[:-3] + "_s"] = _when(rec.pop(f))
    for f in ("max_read_end", "max_write_end"):
        rec[f] = None if rec[f] < 0 else rec[f]
    rec.pop("pad", None)
    return rec


def _string(data: bytes, pos: int, path: Path) -> tuple[str, int]:
    if pos + 2 > len(data):
        raise RunDirectoryError(f"{path}: truncated in a file name")
    n = int.from_bytes(data[pos:pos + 2], "little")
    if pos + 2 + n > len(data):
        raise RunDirectoryError(f"{path}: truncated in a file name")
    return data[pos + 2:pos + 2 + n].decode("utf-8", "surrogateescape"), pos + 2 + n


def read_file(path: Path) -> dict[str, Any]:
    """One rank's io file: header fields, records (RankRecord), accesses (io_access array), functions."""
    # a regular file only (a FIFO or a device would hang or never end); a rank recovered from its
    # statistics file comes as its bytes (recover.Virtual)
    data = path.read_bytes() if isinstance(path, recover.Virtual) else layout.read_regular(path)
    head = L.IO_HEADER
    if len(data) < head.size or data[:8] != L.MAGIC_IO:
        raise RunDirectoryError(f"{path}: not an mpilens I/O file (magic {data[:8]!r})")
    h = dict(zip(L.IO_HEADER_FIELDS, head.unpack_from(data)))
    rank = int(h["rank"])
    pos = head.size
    recs = []
    for _ in range(h["nfiles"]):
        if pos + L.IO_FILE.size > len(data):
            raise RunDirectoryError(f"{path}: truncated: {h['nfiles']} files announced, {len(recs)} present")
        raw = np.frombuffer(data, dtype=L.IO_FILE_DTYPE, count=1, offset=pos)[0]
        pos += L.IO_FILE.size
        name, pos = _string(data, pos, path)
        fpath, pos = _string(data, pos, path)
        fs, pos = _string(data, pos, path)
        mount, pos = _string(data, pos, path)
        recs.append(RankRecord(rank, name, fpath, fs, mount, _record(raw)))
    n = int(h["accesses"])
    if pos + n * L.IO_ACCESS.size > len(data):
        raise RunDirectoryError(f"{path}: truncated: {n} accesses announced")
    acc = np.frombuffer(data, dtype=L.IO_ACCESS_DTYPE, count=n, offset=pos).copy()
    pos += n * L.IO_ACCESS.size
    try:
        functions = {int(k): v for k, v in json.loads(data[pos:].decode()).get("functions", {}).items()}
    except (ValueError, AttributeError) as e:
        raise RunDirectoryError(f"{path}: damaged function names at the end ({e})") from None
    return {"header": h, "rank": rank, "records": recs, "accesses": acc, "functions": functions}


ACCESS_DTYPE = np.dtype([("rank", "<i4"), ("file", "<i4"), ("fn", "<u2"), ("kind", "<u2"), ("t0_s", "<f8"),
                         ("dur_s", "<f8"), ("offset", "<i8"), ("bytes", "<i8")])


def load(rundir: str | Path) -> IORun:
    """Read every rank's io file; RunDirectoryError when the run has none (no rank opened a file,
    or MPILENS_IO=0). A damaged file is a problem named in the result; the others are read."""
    files: list[Any] = list(layout.io_files(rundir))
    problems: list[str] = []
    # the ranks killed without a word: their records from their statistics files
    have = {layout.rank_of("io", f) for f in files}
    files += recover.recover_io(rundir, {r for r in have if r is not None}, problems)
    if not files:
        raise RunDirectoryError(f"{rundir}: no I/O recorded (no rank opened a file with MPI_File_open, "
                                "or the run had MPILENS_IO=0)")
    records: list[RankRecord] = []
    parts = []
    names: list[str] = []
    index: dict[str, int] = {}
    out = IORun([], np.zeros(0, ACCESS_DTYPE), names, {}, [], 0, problems=problems)
    for f in files:
        try:
            one = read_file(f)
        except (RunDirectoryError, OSError) as e:
            out.problems.append(str(e))
            continue
        rank, h = one["rank"], one["header"]
        out.ranks.append(rank)
        out.nranks = max(out.nranks, int(h["nranks"]))
        out.functions[rank] = one["functions"]
        if h["dropped_files"]:
            out.dropped_files[rank] = int(h["dropped_files"])
        if h["dropped_accesses"]:
            out.dropped_accesses[rank] = int(h["dropped_accesses"])
        if not h["complete"]:
            out.incomplete.append(rank)
        records += one["records"]
        local = [index.setdefault(r.name, len(index)) for r in one["records"]]
        a = one["accesses"]
        arr = np.zeros(len(a), ACCESS_DTYPE)
        arr["rank"] = rank
        ids = a["file"].astype(np.int64)
        arr["file"] = np.asarray(local, dtype=np.int64)[ids] if local and len(a) else -1
        arr["fn"], arr["kind"] = a["fn"], a["kind"]
        arr["t0_s"], arr["dur_s"] = a["t0_ns"] * 1e-9, a["dur_ns"] * 1e-9
        arr["offset"], arr["bytes"] = a["offset"], a["bytes"]
        parts.append(arr)
    if not out.ranks:
        raise RunDirectoryError(f"{rundir}: no readable I/O file: {'; '.join(out.problems)}")
    names.extend(sorted(index, key=index.__getitem__))
    out.records = records
    out.accesses = np.concatenate(parts) if parts else np.zeros(0, ACCESS_DTYPE)
    return out


def _sum(recs: list[RankRecord], key: str) -> Any:
    vals = [r.rec[key] for r in recs]
    if isinstance(vals[0], list):
        return [sum(v[i] for v in vals) for i in range(len(vals[0]))]
    return sum(vals)


def _calls(counts: list[int]) -> dict[str, int]:
    d = dict(zip(MODES, counts))
    return {"total": sum(counts), "independent": counts[0] + counts[1], "collective": counts[2] + counts[3],
            "blocking": counts[0] + counts[2], "nonblocking": counts[1] + counts[3], **d}


def _min(vals: list[float | None]) -> float | None:
    v = [x for x in vals if x is not None]
    return min(v) if v else None


def _max(vals: list[Any]) -> Any:
    v = [x for x in vals if x is not None]
    return max(v) if v else None


def summarize(name: str, recs: list[RankRecord]) -> dict[str, Any]:
    """One file over the ranks that opened it: sums, and per rank the detail."""
    first = recs[0]
    reads, writes = _sum(recs, "reads"), _sum(recs, "writes")
    meta = {m: float(_sum(recs, f"{m}_s")) for m in META}
    slowest = max(recs, key=lambda r: r.time_s)
    return {
        "name": name,
        "path": first.path,
        "fs_type": first.fs_type or None,
        "mount": first.mount or None,
        "ranks": [r.rank for r in recs],
        "shared": len(recs) > 1,
        "bytes_read": int(_sum(recs, "bytes_read")),
        "bytes_written": int(_sum(recs, "bytes_written")),
        "opens": int(_sum(recs, "opens")),
        "closes": int(_sum(recs, "closes")),
        "syncs": int(_sum(recs, "syncs")),
        "set_views": int(_sum(recs, "views")),
        "set_sizes": int(_sum(recs, "resizes")),
        "reads": _calls(reads),
        "writes": _calls(writes),
        "read_sizes": dict(zip(SIZE_BINS, _sum(recs, "read_sizes"))),
        "write_sizes": dict(zip(SIZE_BINS, _sum(recs, "write_sizes"))),
        "read_patterns": dict(zip(PATTERNS, _sum(recs, "read_patterns"))),
        "write_patterns": dict(zip(PATTERNS, _sum(recs, "write_patterns"))),
        "time_s": {"read": float(_sum(recs, "read_s")), "write": float(_sum(recs, "write_s")),
                   "meta": sum(meta.values()), **meta},
        "slowest_read_call_s": _max([r.rec["max_read_s"] if sum(r.rec["reads"]) else None for r in recs]),
        "slowest_write_call_s": _max([r.rec["max_write_s"] if sum(r.rec["writes"]) else None for r in recs]),
        "first_open_s": _min([r.rec["first_open_s"] for r in recs]),
        "first_access_s": _min([r.rec["first_access_s"] for r in recs]),
        "last_access_s": _max([r.rec["last_access_s"] for r in recs]),
        "last_close_s": _max([r.rec["last_close_s"] for r in recs]),
        "end_of_writes": _max([r.rec["max_write_end"] for r in recs]),
        "end_of_reads": _max([r.rec["max_read_end"] for r in recs]),
        "slowest_rank": slowest.rank,
        "slowest_rank_time_s": slowest.time_s,
        "per_rank": [{
            "rank": r.rank, "bytes_read": r.rec["bytes_read"], "bytes_written": r.rec["bytes_written"],
            "opens": r.rec["opens"], "reads": _calls(r.rec["reads"]), "writes": _calls(r.rec["writes"]),
            "read_patterns": dict(zip(PATTERNS, r.rec["read_patterns"])),
            "write_patterns": dict(zip(PATTERNS, r.rec["write_patterns"])),
            "time_s": r.time_s, "read_s": r.rec["read_s"], "write_s": r.rec["write_s"], "meta_s": r.meta_s,
            "first_access_s": r.rec["first_access_s"], "last_access_s": r.rec["last_access_s"],
            "end_of_writes": r.rec["max_write_end"], "end_of_reads": r.rec["max_read_end"],
            "comm_size": r.rec["comm_size"], "amode": r.rec["amode"],
        } for r in recs],
    }
