"""The text report of `mpilens report`, laid out in the spirit of mpiP: MPI time per rank, top
functions by time and by bytes with their spread across ranks, message sizes, top talkers,
regions, findings."""

from __future__ import annotations

from typing import Any

from .. import units
from ..findings import Finding
from ..rundir import Run
from ..summary import Summary

MAX_RANK_ROWS = 16
TOP = 20


def _table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    right = right if right is not None else set(range(1, len(headers)))
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)] if rows else [len(h) for h in headers]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def _command(run: Run) -> str:
    cmd = (run.meta or {}).get("command")
    return " ".join(cmd) if isinstance(cmd, list) else "n/a"


def _mpi(run: Run) -> str:
    lib = ((run.meta or {}).get("mpi") or {}).get("library", "")
    return lib.splitlines()[0].strip() if lib else (run.profile.get("tool") or {}).get("mpi", "n/a")


def render(run: Run, s: Summary, findings: list[Finding], timeline_findings: list[Any] | None = None) -> str:
    """Return the text report."""
    out: list[str] = []
    hosts = {r.host for r in s.ranks if r.host}
    out.append(f"mpilens report: {run.path}")
    out.append(f"Command   : {_command(run)}")
    out.append(f"MPI       : {_mpi(run)}")
    out.append(f"Ranks     : {s.nranks} on {len(hosts)} host{'s' if len(hosts) != 1 else ''}"
               + ("" if run.complete or run.snapshot is not None
                  else f"  (INCOMPLETE: data from {s.measured_ranks} ranks)"))
    if s.wall and s.mpi:
        out.append(f"Wall time : {units.seconds(s.wall.max)} (slowest rank), MPI time {units.percent(s.mpi.total / s.wall.total)}"
                   f" of the total")
    if s.sampling:
        out.append(f"Timing    : {s.sampling.sentence()}")
    for c in (run.meta or {}).get("cvars_set") or []:  # MPI_T cvars mpilens set (see `mpilens mpit`)
        where = f" when communicator {c['communicator']!r} was named" if c.get("communicator") else ""
        new = c.get("new") if c.get("new") is not None else "not applied"
        out.append(f"MPI_T cvar: {c.get('name')} {c.get('old')} -> {new}{where}")
    for p in run.problems:
        out.append(f"Note      : {p}")

    out += ["", "@ MPI time per rank"]
    ended = not run.complete and run.snapshot is None  # how each rank ended, when not all reached MPI_Finalize
    se = s.sampling is not None  # sampled timing: each rank's MPI time is an estimate, with its standard error
    rows = [[str(r.rank), r.host or "n/a", units.seconds(r.wall), units.seconds(r.mpi), units.percent(r.mpi_share)]
            + ([units.seconds(r.mpi_se)] if se else [])
            + ([r.ended_by or "no data"] if ended else []) for r in s.ranks]
    if len(rows) > MAX_RANK_ROWS:
        keyed = sorted((r for r in s.ranks if r.mpi_share is not None), key=lambda r: -r.mpi_share)  # type: ignore
        keep = {r.rank for r in keyed[:MAX_RANK_ROWS // 2]} | {r.rank for r in keyed[-(MAX_RANK_ROWS // 2):]}
        rows = [row for row, r in zip(rows, s.ranks) if r.rank in keep]
        out.append(f"(the {MAX_RANK_ROWS // 2} ranks with the most and the least MPI time of {s.nranks})")
    if s.wall and s.mpi:
        rows.append(["*", "", units.seconds(s.wall.total), units.seconds(s.mpi.total), units.percent(s.mpi.total / s.wall.total)]
                    + ([units.seconds(s.sampling.mpi_se)] if s.sampling else []) + ([""] if ended else []))
    out += _table(["Rank", "Host", "Wall", "MPI", "MPI%"] + (["MPI ± (s.e.)"] if se else []) + (["Ended by"] if ended else []),
                  rows, {2, 3, 4, 5} if se else {2, 3, 4})

    out += ["", f"@ Top MPI functions by time (aggregate over ranks; spread = per-rank time)"]
    rows = []
    for f in s.functions[:TOP]:
        rows.append([f.name, f.cls, units.count(f.calls.total), units.seconds(f.time.total), units.percent(f.share_of_mpi),
                     units.percent(f.share_of_wall), units.seconds(f.time.min), units.seconds(f.time.mean),
                     units.seconds(f.time.max), f"{f.time.max_rank}", f"{f.time.max_over_mean:.2f}"])
    out += _table(["Function", "Class", "Calls", "Time", "MPI%", "Wall%", "Min", "Mean", "Max", "MaxRank", "Max/Mean"],
                  rows, set(range(2, 11)))

    by_bytes = sorted((f for f in s.functions if f.bytes_total > 0), key=lambda f: (-f.bytes_total, f.name))
    if by_bytes:
        out += ["", "@ Top MPI functions by bytes (sent + received, aggregate over ranks)"]
        rows = [[f.name, units.count(f.calls.total), units.size(f.sent.total), units.size(f.recv.total),
                 units.size(f.bytes_per_call), units.size(f.sent.max), f"{f.sent.max_rank}"] for f in by_bytes[:TOP]]
        out += _table(["Function", "Calls", "Sent", "Received", "Bytes/call", "MaxSent/rank", "Rank"], rows)

    if s.sizes:
        out += ["", "@ Message sizes (transfers of all functions; nonblocking ones are timed by their Wait/Test)"]
        total = sum(c for _, _, c, _ in s.sizes) or 1
        rows = []
        for lo, hi, calls, t in s.sizes:
            label = "0 B" if hi == 0 else f"{units.size(lo)} - {units.size(hi + 1)}"
            bar = "#" * max(1, round(40 * calls / total)) if calls else ""
            rows.append([label, units.count(calls), units.percent(calls / total), units.seconds(t), bar])
        out += _table(["Size", "Calls", "Share", "Time (blocking)", ""], rows, {1, 2, 3})

    if s.talkers:
        out += ["", "@ Top talkers (point-to-point, by bytes)"]
        rows = [[str(m["src"]), str(m["dst"]), units.count(m["messages"]), units.size(m["bytes"]),
                 units.size(m["bytes"] / m["messages"] if m["messages"] else 0)] for m in s.talkers[:10]]
        out += _table(["From", "To", "Messages", "Bytes", "Bytes/msg"], rows)

    if s.regions:
        out += ["", "@ Regions (time per rank: mean / max; MPI time inside)"]
        rows = []
        for r in s.regions:
            top = r.functions[0].name if r.functions else ""
            rows.append(["  " * r.depth + r.path.split("/")[-1], units.count(r.visits.total if r.visits else None),
                         units.seconds(r.time.mean if r.time else None), units.seconds(r.time.max if r.time else None),
                         units.seconds(r.mpi_time.mean if r.mpi_time else 0.0),
                         units.percent((r.mpi_time.total / r.time.total) if r.mpi_time and r.time and r.time.total else None),
                         top])
        out += _table(["Region", "Visits", "Mean", "Max", "MPI(mean)", "MPI%", "Top MPI function"], rows, {1, 2, 3, 4, 5})

    out += ["", "@ Findings"]
    if not findings:
        out.append("Nothing stands out.")
    for f in findings:
        out.append(f"[{f.severity}] {f.message}")
    if timeline_findings is not None:  # trace mode: what the timeline shows, worst first per kind
        out += ["", "@ Timeline findings (trace)"]
        if not timeline_findings:
            out.append("Nothing stands out in the timeline.")
        for f in timeline_findings:
            out.append(f"[{f.kind}] {f.message}")
    return "\n".join(out) + "\n"


def as_json(run: Run, s: Summary, findings: list[Finding], timeline_findings: list[Any] | None = None) -> dict[str, Any]:
    """Return the machine-readable report: summary figures and findings."""
    def sp(x: Any) -> Any:
        return None if x is None else {"total": x.total, "mean": x.mean, "min": x.min, "max": x.max,
                                       "min_rank": x.min_rank, "max_rank": x.max_rank, "cov": x.cov}

    return {
        "run": str(run.path),
        "complete": run.complete,
        "snapshot": run.snapshot,  # N for `--snapshot N`: the statistics as of MPI_Pcontrol(3|4) number N
        "problems": run.problems,
        "nranks": s.nranks,
        "measured_ranks": s.measured_ranks,
        "wall_time_s": sp(s.wall),
        "mpi_time_s": sp(s.mpi),
        "mpi_share": (s.mpi.total / s.wall.total) if s.mpi and s.wall and s.wall.total else None,
        "functions": [{"name": f.name, "class": f.cls, "calls": f.calls.total, "time_s": sp(f.time),
                       "bytes_sent": f.sent.total, "bytes_recv": f.recv.total, "share_of_mpi": f.share_of_mpi,
                       "imbalance": f.time.imbalance} for f in s.functions],
        "findings": [f.to_dict() for f in findings],
        # null without a trace, a list (maybe empty) with one
        "timeline_findings": None if timeline_findings is None else [f.to_dict() for f in timeline_findings],
        "cvars_set": (run.meta or {}).get("cvars_set") or [],
        # null when every call was timed; else {every: N, timed, calls} (MPILENS_TIME_SAMPLE)
        "time_sampling": None if s.sampling is None else {"every": s.sampling.every, "timed_calls": s.sampling.timed,
                                                          "calls": s.sampling.calls},
    }
