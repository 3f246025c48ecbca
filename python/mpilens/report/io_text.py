"""I/O per file as text: `mpilens io`, and the lines the report's I/O section shows (mpilens.io reads,
this module words)."""

from __future__ import annotations

from typing import Any

from .. import _layout as L
from .. import units
from ..io import META, IORun


def kind_label(kind: int) -> str:
    """A short label of an io_kind: "write collective", "read nonblocking", "open", ..."""
    for bit, label in ((L.IO_KIND_OPEN, "open"), (L.IO_KIND_CLOSE, "close"), (L.IO_KIND_SYNC, "sync"),
                       (L.IO_KIND_VIEW, "set_view"), (L.IO_KIND_SIZE, "set_size")):
        if kind & bit:
            return label
    what = "write" if kind & L.IO_KIND_WRITE else "read"
    how = "collective" if kind & L.IO_KIND_COLLECTIVE else "independent"
    nb = " nonblocking" if kind & L.IO_KIND_NONBLOCKING else ""
    end = " end" if kind & L.IO_KIND_END else ""
    return f"{what} {how}{nb}{end}"


def _calls_text(c: dict[str, int]) -> str:
    parts = [f"{c['independent']} independent", f"{c['collective']} collective"]
    if c["nonblocking"]:
        parts.append(f"{c['nonblocking']} nonblocking")
    return ", ".join(parts)


def _bins_text(d: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items() if v) or "none"


def file_lines(f: dict[str, Any], detail: bool = True) -> list[str]:
    """The text of one file's summary (a dict of `summarize`)."""
    where = f"{f['fs_type']} on {f['mount']}" if f["fs_type"] else "file system not known"
    who = f"shared by {len(f['ranks'])} ranks" if f["shared"] else f"rank {f['ranks'][0]} only"
    w, r, t = f["writes"], f["reads"], f["time_s"]
    out = [f"{f['name']}  ({who}; {where})"]
    if f["path"] and f["path"] != f["name"]:
        out.append(f"  path            {f['path']}")
    out.append(f"  written         {units.size(f['bytes_written'])} ({f['bytes_written']} B) in {w['total']} calls"
               + (f" ({_calls_text(w)})" if w["total"] else ""))
    out.append(f"  read            {units.size(f['bytes_read'])} ({f['bytes_read']} B) in {r['total']} calls"
               + (f" ({_calls_text(r)})" if r["total"] else ""))
    if detail:
        if w["total"]:
            out.append(f"  write sizes     {_bins_text(f['write_sizes'])}")
            out.append(f"  write offsets   {_bins_text(f['write_patterns'])}")
        if r["total"]:
            out.append(f"  read sizes      {_bins_text(f['read_sizes'])}")
            out.append(f"  read offsets    {_bins_text(f['read_patterns'])}")
    meta = ", ".join(f"{m} {units.seconds(t[m])}" for m in META if t[m])
    out.append(f"  time            read {units.seconds(t['read'])}, write {units.seconds(t['write'])}, "
               f"metadata {units.seconds(t['meta'])}" + (f" ({meta})" if meta else "") + " (summed over ranks)")
    out.append(f"  opens {f['opens']}, closes {f['closes']}, syncs {f['syncs']}, set_view {f['set_views']}, "
               f"set_size {f['set_sizes']}")
    out.append(f"  slowest rank    {f['slowest_rank']}: {units.seconds(f['slowest_rank_time_s'])} on this file")
    if f["first_access_s"] is not None:
        out.append(f"  accessed        from {units.seconds(f['first_access_s'])} to {units.seconds(f['last_access_s'])} "
                   "after MPI_Init")
    if detail and f["shared"]:
        out.append("  rank     written        read  writes  reads       time")
        for p in f["per_rank"]:
            out.append(f"  {p['rank']:>4} {units.size(p['bytes_written']):>11} {units.size(p['bytes_read']):>11} "
                       f"{p['writes']['total']:>7} {p['reads']['total']:>6} {units.seconds(p['time_s']):>10}")
    return out


def render_text(io: IORun) -> str:
    """The text of `mpilens io`."""
    files = io.files()
    ranks = io.ranks
    out = [f"I/O per file: {len(files)} file{'s' if len(files) != 1 else ''}; "
           f"{len(ranks)} of {io.nranks} ranks opened files with MPI-IO", ""]
    for f in files:
        out += file_lines(f) + [""]
    if io.dropped_files:
        out.append(f"not recorded: {sum(io.dropped_files.values())} files beyond MPILENS_IO_MAX_FILES")
    if io.dropped_accesses:
        out.append(f"{sum(io.dropped_accesses.values())} accesses counted per file but not listed "
                   "(beyond MPILENS_IO_ACCESSES)")
    if io.incomplete:
        out.append(f"ranks that ended before MPI_Finalize: {', '.join(map(str, io.incomplete))}")
    out += [f"problem: {p}" for p in io.problems]
    return "\n".join(out).rstrip() + "\n"
