"""Findings: the few statements a performance engineer would make first when looking at a profile,
each with the numbers that support it. Thresholds are named constants so reports can cite them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from . import _layout as L
from . import units
from .errors import RunDirectoryError
from .rundir import Run
from .summary import Summary

MPI_SHARE_NOTABLE = 0.25  # MPI share of wall time worth a statement
RANK_SPREAD_NOTABLE = 0.15  # difference of MPI share between ranks (fraction of wall)
FUNCTION_SHARE_NOTABLE = 0.05  # a function must hold this share of MPI time to be discussed
IMBALANCE_NOTABLE = 0.5  # (max - mean) / mean of a function's time across ranks
SMALL_MESSAGE = 1024  # bytes
SMALL_SHARE_NOTABLE = 0.8  # share of point-to-point messages below SMALL_MESSAGE
PAIR_SHARE_NOTABLE = 0.5  # share of point-to-point bytes on one pair, with more than 2 ranks
SAMPLING_SE_NOTABLE = 0.05  # standard error of sampled MPI time, as a share of it
# I/O per file (mpilens.io)
IO_ALIGN = 4096  # bytes: a write is aligned when its offset and size are multiples of this (a file-system block)
IO_SMALL_WRITE = 4096  # bytes: a write below this is small
IO_SMALL_UNALIGNED_NOTABLE = 16  # small unaligned writes to one file worth a statement ...
IO_SMALL_UNALIGNED_SHARE = 0.5  # ... when they are at least this share of its listed writes
IO_INDEPENDENT_NOTABLE = 64  # independent writes to one shared file worth a statement ...
IO_INDEPENDENT_SHARE = 0.8  # ... when they are at least this share of its writes
IO_ONE_RANK_SHARE = 0.9  # share of all bytes read and written by one rank ...
IO_ONE_RANK_MIN_BYTES = 1 << 20  # ... when the run moves at least this much through MPI-IO
IO_META_SHARE = 0.5  # share of I/O time in open, close, sync, set_view, set_size ...
IO_META_MIN_S = 0.01  # ... when that time is at least this (summed over ranks)


@dataclass
class Finding:
    """One statement about the run."""

    kind: str
    severity: str  # info | warning | problem
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The finding as a JSON object."""
        return asdict(self)


def find(run: Run, s: Summary) -> list[Finding]:
    """Return the findings of a run, most important first."""
    out: list[Finding] = []
    if not run.complete and run.snapshot is None:  # a snapshot is a part of a run by design
        aborted = [r.rank for r in s.ranks if r.ended_by == "MPI_Abort"]
        signalled = [r.rank for r in s.ranks if r.ended_by and r.ended_by.startswith("signal")]
        how = (f" Rank{'s' if len(aborted) > 1 else ''} {', '.join(map(str, aborted))} called MPI_Abort." if aborted else "") \
            + (f" {len(signalled)} rank{'s were' if len(signalled) > 1 else ' was'} killed by a signal." if signalled else "")
        out.append(Finding("incomplete", "problem",
                           f"The job did not reach MPI_Finalize: {s.measured_ranks} of {s.nranks} ranks left data.{how} "
                           "Figures cover what was measured until each rank ended.",
                           {"measured_ranks": s.measured_ranks, "nranks": s.nranks, "aborted": aborted,
                            "signalled": signalled}))
    for what, n in s.dropped.items():
        if n:
            out.append(Finding("dropped", "warning", {
                "requests_untracked": f"{n} nonblocking requests did not fit the request table; their bytes are "
                                      "missing. Raise MPILENS_MAX_REQUESTS.",
                "region_paths": f"{n} region entries went beyond MPILENS_MAX_REGIONS and were counted under "
                                "'(overflow)'.",
                "region_mismatches": f"{n} region ends did not match the innermost open region.",
                "requests_outstanding_at_finalize": f"{n} requests were still outstanding at MPI_Finalize; their "
                                                    "bytes are not counted.",
                "receive_sizes_unknown": f"{n} receives completed with a status that is not theirs (MPICH-family MPIs "
                                         "complete MPI_Isendrecv so): their received bytes are unknown and not "
                                         "counted; the bytes sent, and the matrix (sender side), are exact.",
            }.get(what, f"{what}: {n}"), {what: n}))

    if s.sampling:  # estimated times: say when the sampling error is large enough to matter
        over = [r for r in s.ranks if r.mpi is not None and r.wall and r.mpi > r.wall]
        se = s.sampling.mpi_se or 0.0
        if over or (s.mpi and s.mpi.total and se > SAMPLING_SE_NOTABLE * s.mpi.total):
            where = (f" Rank{'s' if len(over) > 1 else ''} {', '.join(str(r.rank) for r in over)}: estimated MPI time "
                     "above the wall time." if over else "")
            out.append(Finding("sampling_error", "warning",
                               f"MPI times are estimated from 1 in {s.sampling.every} calls and uncertain: "
                               f"± {units.seconds(se)} (standard error) on {units.seconds(s.mpi.total if s.mpi else None)}"
                               f" summed over ranks.{where} A long call (a wait, a preemption) drawn into the sample counts "
                               f"{s.sampling.every} times; a smaller MPILENS_TIME_SAMPLE narrows it.",
                               {"mpi_time_se": se, "ranks_over_wall": [r.rank for r in over]}))

    shares = [(r.mpi_share, r.rank) for r in s.ranks if r.mpi_share is not None]
    if s.mpi and s.wall and shares:
        mean_share = s.mpi.total / s.wall.total if s.wall.total else 0.0
        hi = max(shares)
        lo = min(shares)
        if mean_share >= MPI_SHARE_NOTABLE:
            out.append(Finding("mpi_share", "warning" if mean_share >= 0.5 else "info",
                               f"MPI takes {units.percent(mean_share)} of the run's time (summed over ranks); "
                               f"most on rank {hi[1]} ({units.percent(hi[0])}).",
                               {"mpi_share": mean_share, "max_rank": hi[1], "max_share": hi[0]}))
        if len(shares) > 1 and hi[0] - lo[0] >= RANK_SPREAD_NOTABLE:
            out.append(Finding("rank_imbalance", "warning",
                               f"Ranks spend unequal time in MPI: rank {hi[1]} {units.percent(hi[0])}, rank {lo[1]} "
                               f"{units.percent(lo[0])}. Where ranks synchronize, the one with the least MPI time is "
                               f"the one the others wait for: rank {lo[1]} has the most work.",
                               {"max_rank": hi[1], "max_share": hi[0], "min_rank": lo[1], "min_share": lo[0]}))

    for f in s.functions[:5]:
        if f.share_of_mpi < FUNCTION_SHARE_NOTABLE or f.time.n < 2:
            continue
        if f.time.imbalance >= IMBALANCE_NOTABLE:
            out.append(Finding("function_imbalance", "warning",
                               f"{f.name} ({units.percent(f.share_of_mpi)} of MPI time) is imbalanced: rank "
                               f"{f.time.max_rank} spends {f.time.max_over_mean:.2f}x the mean "
                               f"({units.seconds(f.time.max)} vs {units.seconds(f.time.mean)}); rank "
                               f"{f.time.min_rank} the least ({units.seconds(f.time.min)}).",
                               {"function": f.name, "max_rank": f.time.max_rank, "max_s": f.time.max,
                                "mean_s": f.time.mean, "min_rank": f.time.min_rank, "min_s": f.time.min,
                                "imbalance": f.time.imbalance}))

    p2p_calls = small = 0
    for _lo_b, hi_b, calls, _ in s.sizes:
        p2p_calls += calls
        if hi_b < SMALL_MESSAGE:
            small += calls
    p2p_time = sum(f.time.total for f in s.functions if f.cls == "p2p")
    if p2p_calls and small / p2p_calls >= SMALL_SHARE_NOTABLE and s.mpi and p2p_time >= 0.2 * s.mpi.total:
        out.append(Finding("small_messages", "info",
                           f"{units.percent(small / p2p_calls)} of data-moving calls carry less than "
                           f"{units.size(SMALL_MESSAGE)}, and point-to-point calls take "
                           f"{units.percent(p2p_time / s.mpi.total)} of MPI time: latency-bound; aggregating "
                           "messages would help.",
                           {"small_share": small / p2p_calls, "p2p_share_of_mpi": p2p_time / s.mpi.total}))

    total_bytes = sum(m.bytes for m in s.talkers)
    if s.nranks > 2 and s.talkers and total_bytes:
        top = s.talkers[0]
        if top.bytes / total_bytes >= PAIR_SHARE_NOTABLE:
            out.append(Finding("hot_pair", "info",
                               f"One pair carries {units.percent(top.bytes / total_bytes)} of all point-to-point "
                               f"bytes: rank {top.src} -> rank {top.dst} ({units.size(top.bytes)}).",
                               asdict(top)))
    if "io" in run.modes:
        try:
            out += io_findings(run.io)
        except RunDirectoryError:
            pass
    return out


def io_findings(data: Any) -> list[Finding]:
    """Statements about MPI-IO (a mpilens.io.IORun): small unaligned writes, independent writes to
    a shared file that a collective would batch, one rank doing all the I/O, metadata dominating."""
    import numpy as np

    out: list[Finding] = []
    files = data.files()
    acc = data.accesses
    writes = acc[((acc["kind"] & L.IO_KIND_WRITE) != 0) & ((acc["kind"] & L.IO_KIND_END) == 0)]
    for i, name in enumerate(data.names):
        w = writes[writes["file"] == i]
        known = w[w["offset"] >= 0]
        small = known[(known["bytes"] < IO_SMALL_WRITE)
                      & (((known["offset"] % IO_ALIGN) != 0) | ((known["bytes"] % IO_ALIGN) != 0))]
        if len(small) >= IO_SMALL_UNALIGNED_NOTABLE and len(known) and len(small) / len(known) >= IO_SMALL_UNALIGNED_SHARE:
            out.append(Finding("io_small_unaligned_writes", "warning",
                               f"{name}: {len(small)} of {len(known)} writes are smaller than "
                               f"{units.size(IO_SMALL_WRITE)} and not aligned to {units.size(IO_ALIGN)} (median "
                               f"{units.size(float(np.median(small['bytes'])))}): each costs a read-modify-write of a "
                               "file-system block. Buffering them into larger aligned writes (or a collective "
                               "write, which aggregates) would help.",
                               {"file": name, "small_unaligned_writes": int(len(small)),
                                "writes_with_offset": int(len(known)), "align": IO_ALIGN}))
    for f in files:
        w = f["writes"]
        if f["shared"] and w["independent"] >= IO_INDEPENDENT_NOTABLE and w["independent"] >= IO_INDEPENDENT_SHARE * w["total"]:
            per = w["independent"] / len(f["ranks"])
            out.append(Finding("io_independent_writes", "warning",
                               f"{f['name']} is shared by {len(f['ranks'])} ranks, which write it with "
                               f"{w['independent']} independent calls ({per:.0f} per rank) and {w['collective']} "
                               "collective ones: a collective write (MPI_File_write_at_all, or a file view and "
                               "MPI_File_write_all) lets MPI-IO gather them into few large writes (two-phase I/O).",
                               {"file": f["name"], "independent_writes": w["independent"],
                                "collective_writes": w["collective"], "ranks": len(f["ranks"])}))
    per_rank: dict[int, int] = {}
    for r in data.records:
        per_rank[r.rank] = per_rank.get(r.rank, 0) + r.rec["bytes_read"] + r.rec["bytes_written"]
    total = sum(per_rank.values())
    if data.nranks > 1 and total >= IO_ONE_RANK_MIN_BYTES:
        top = max(per_rank, key=lambda k: per_rank[k])
        if per_rank[top] / total >= IO_ONE_RANK_SHARE:
            out.append(Finding("io_one_rank", "warning",
                               f"Rank {top} reads and writes {units.percent(per_rank[top] / total)} of the "
                               f"{units.size(total)} moved through MPI-IO, the {data.nranks - 1} other ranks the rest: "
                               "the I/O is serialized on one rank. Writing a shared file from every rank "
                               "(collectively) spreads it.",
                               {"rank": top, "share": per_rank[top] / total, "bytes": total}))
    meta = sum(f["time_s"]["meta"] for f in files)
    io_time = meta + sum(f["time_s"]["read"] + f["time_s"]["write"] for f in files)
    if meta >= IO_META_MIN_S and io_time and meta / io_time >= IO_META_SHARE:
        kinds = {k: sum(f["time_s"][k] for f in files) for k in ("open", "close", "sync", "set_view", "set_size")}
        top_kind = max(kinds, key=lambda k: kinds[k])
        out.append(Finding("io_metadata", "info",
                           f"Metadata takes {units.percent(meta / io_time)} of the time in MPI-IO "
                           f"({units.seconds(meta)} summed over ranks, most in {top_kind}: "
                           f"{units.seconds(kinds[top_kind])}); reads and writes the rest. Fewer opens, closes "
                           "and syncs (keep files open, sync once) would help.",
                           {"meta_s": meta, "io_s": io_time, **{f"{k}_s": v for k, v in kinds.items()}}))
    return out
