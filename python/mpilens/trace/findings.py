"""What to look for in a timeline, automated: late senders, late receivers, waits at collectives,
calls or regions of irregular duration, and large gaps between MPI calls. Each finding names the
ranks, the time in the run, the size and the duration, with a one-line explanation."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import units
from . import reader
from .timeline import Timeline

MIN_WAIT_S = 20e-6  # a wait shorter than this is noise, not a finding
TOP = 5  # findings of each kind
OUTLIER_MADS = 6.0  # a duration this many median absolute deviations above the median is irregular
GAP_FACTOR = 10.0  # a gap between MPI calls this many times the rank's median gap is large
MIN_GAP_S = 1e-3


@dataclass
class TraceFinding:
    """One thing that stands out in a trace: its kind, message, where and when, and its evidence."""
    kind: str  # late_sender | late_receiver | collective_wait | irregular | gap
    message: str
    rank: int
    time_s: float  # when it happened, seconds from the start of the run
    duration_s: float  # the time lost or the duration that stands out
    bytes: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The finding as a JSON object."""
        return {"kind": self.kind, "message": self.message, "rank": self.rank, "time_s": self.time_s,
                "duration_s": self.duration_s, "bytes": self.bytes, **self.evidence}


def _waiting_call(tl: Timeline, i: int) -> int:
    """The call event that waited for event i: i itself for a call; for the completion record of a
    nonblocking operation, the completion call (MPI_Wait...) of the same thread around it."""
    ev = tl.ev
    if ev["kind"][i] == reader.CALL:
        return i
    t = ev["t0"][i]
    for j in range(i - 1, max(i - 256, -1), -1):
        if ev["rank"][j] != ev["rank"][i] or ev["thread"][j] != ev["thread"][i]:
            break
        if ev["kind"][j] == reader.CALL and ev["t0"][j] <= t <= ev["t1"][j] + 1e-9:
            return j
    return i


def _at(tl: Timeline, i: int) -> str:
    """" in file:line (function)" of the call of event i, when the trace has call sites."""
    where = tl.site_text(_waiting_call(tl, i)) if tl.sites else None
    return f" in {where}" if where else ""


def late_senders(tl: Timeline, top: int = TOP) -> list[TraceFinding]:
    """A receive waited because its message was sent after the receive was posted. Receives that
    one call completed (an MPI_Waitall of many) were one wait: one finding, the longest."""
    m = tl.messages
    ev = tl.ev
    wait = np.minimum(m.send_t - m.recv_post_t, m.recv_t - m.recv_post_t)
    idx = np.flatnonzero(wait > MIN_WAIT_S)
    # the completing call: its rank and thread, and its end (the same for all it completed)
    call = list(zip(m.dst[idx].tolist(), ev["thread"][m.recv_ev[idx]].tolist(), m.recv_t[idx].tolist()))
    late_in_call = collections.Counter(call)
    key = dict(zip(idx.tolist(), call))
    out, reported = [], set()
    for i in idx[np.argsort(-wait[idx], kind="stable")].tolist():
        if key[i] in reported:
            continue
        reported.add(key[i])
        more = late_in_call[key[i]] - 1
        out.append(TraceFinding(
            "late_sender",
            f"Late sender: rank {m.dst[i]} waited {units.seconds(wait[i])}{_at(tl, int(m.recv_ev[i]))} at "
            f"{units.seconds(m.recv_post_t[i])} for a "
            f"{units.size(m.bytes[i])} message that rank {m.src[i]} sent only then (tag {m.tag[i]})"
            + (f"; the call that completed it waited for {more} more late message{'s' if more > 1 else ''}."
               if more else "."),
            int(m.dst[i]), float(m.recv_post_t[i]), float(wait[i]), int(m.bytes[i]),
            {"sender": int(m.src[i]), "receiver": int(m.dst[i]), "tag": int(m.tag[i]),
             "late_messages_in_call": more + 1, "site": tl.site(_waiting_call(tl, int(m.recv_ev[i])))}))
        if len(out) == top:
            break
    return out


def late_receivers(tl: Timeline, top: int = TOP) -> list[TraceFinding]:
    """A blocking send waited because the matching receive was posted after the send started
    (synchronous or rendezvous sends complete only once the receive is there)."""
    m = tl.messages
    ev = tl.ev
    send_end = ev["t1"][m.send_ev]
    blocking = ev["kind"][m.send_ev] == reader.CALL
    wait = np.minimum(m.recv_post_t - m.send_t, send_end - m.send_t)
    idx = np.flatnonzero(blocking & (wait > MIN_WAIT_S) & (send_end > m.recv_post_t))
    out = []
    for i in idx[np.argsort(-wait[idx], kind="stable")][:top]:
        out.append(TraceFinding(
            "late_receiver",
            f"Late receiver: rank {m.src[i]}'s {tl.functions[ev['fn'][m.send_ev[i]]]}{_at(tl, int(m.send_ev[i]))} of "
            f"{units.size(m.bytes[i])} "
            f"waited {units.seconds(wait[i])} at {units.seconds(m.send_t[i])} until rank {m.dst[i]} posted its receive.",
            int(m.src[i]), float(m.send_t[i]), float(wait[i]), int(m.bytes[i]),
            {"sender": int(m.src[i]), "receiver": int(m.dst[i]), "tag": int(m.tag[i]),
             "site": tl.site(_waiting_call(tl, int(m.send_ev[i])))}))
    return out


def collective_waits(tl: Timeline, top: int = TOP) -> list[TraceFinding]:
    """Ranks that waited in a collective for the last one to arrive."""
    c = tl.collectives
    if len(c.instance) == 0:
        return []
    ninst = int(c.instance.max()) + 1
    # per instance: the largest wait, who waited, who arrived last
    wait = c.last_arrival - c.arrive
    total = np.zeros(ninst)
    np.add.at(total, c.instance, wait)
    late_rank = np.full(ninst, -1)
    late_rank[c.instance[wait == 0]] = c.rank[wait == 0]
    out = []
    # a trace of some ranks (MPILENS_TRACE_RANKS, an export's --ranks): the last of those traced
    partial = " traced ranks (the others were not traced)" if 0 < len(tl.traced) < tl.nranks else ""
    for inst in np.argsort(-total)[:top]:
        rows = np.flatnonzero(c.instance == inst)
        w = wait[rows]
        if w.max() <= MIN_WAIT_S:
            continue
        waiter = rows[np.argmax(w)]
        out.append(TraceFinding(
            "collective_wait",
            f"Wait at collective: in {tl.functions[c.fn[waiter]]}{_at(tl, int(c.ev[waiter]))} at "
            f"{units.seconds(c.arrive[waiter])}, rank "
            f"{c.rank[waiter]} waited {units.seconds(w.max())} for rank {late_rank[inst]}, the last of "
            f"{len(rows)}{partial} to arrive (all ranks together waited {units.seconds(total[inst])}).",
            int(c.rank[waiter]), float(c.arrive[waiter]), float(w.max()), None,
            {"late_rank": int(late_rank[inst]), "participants": int(len(rows)), "total_wait_s": float(total[inst]),
             "function": tl.functions[c.fn[waiter]], "site": tl.site(int(c.ev[waiter]))}))
    return out


def _outliers(d: np.ndarray) -> np.ndarray:
    med = np.median(d)
    mad = np.median(np.abs(d - med)) or 1e-9
    return np.flatnonzero((d > med + OUTLIER_MADS * mad) & (d > 2 * med) & (d - med > MIN_WAIT_S))


def irregular_durations(tl: Timeline, top: int = TOP) -> list[TraceFinding]:
    """Occurrences of the same call or region that took much longer than the others (median +
    OUTLIER_MADS median absolute deviations), per rank."""
    calls, regions = irregular_candidates(tl)
    found = calls + regions
    found.sort(key=lambda x: -x[0])
    return [f for _, f in found[:top]]


def irregular_candidates(tl: Timeline) -> tuple[list[tuple[float, TraceFinding]], list[tuple[float, TraceFinding]]]:
    """The irregular calls and the irregular region visits, each with how much longer than its
    median it took, in the order of their ranks (what irregular_durations sorts: the out-of-core
    analysis joins the ranks' own, mpilens.trace.scan)."""
    ev = tl.ev
    found: list[tuple[float, TraceFinding]] = []
    calls = np.flatnonzero(ev["kind"] == reader.CALL)
    groups: dict[tuple[int, str], np.ndarray] = {}
    if len(calls):
        key = ev["rank"][calls].astype(np.int64) * 65536 + ev["fn"][calls]
        order = np.argsort(key, kind="stable")
        k = key[order]
        bounds = np.r_[0, np.flatnonzero(k[1:] != k[:-1]) + 1, len(k)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows = calls[order[a:b]]
            if len(rows) >= 10:
                groups[(int(ev["rank"][rows[0]]), tl.functions[ev["fn"][rows[0]]])] = rows
    for (rank, name), rows in groups.items():
        d = ev["t1"][rows] - ev["t0"][rows]
        med = float(np.median(d))
        for j in _outliers(d):
            i = rows[j]
            found.append((float(d[j] - med), TraceFinding(
                "irregular", f"Irregular duration: rank {rank}'s {name} at {units.seconds(ev['t0'][i])} took "
                f"{units.seconds(d[j])}, against a median of {units.seconds(med)} over {len(rows)} calls.",
                rank, float(ev["t0"][i]), float(d[j]), int(max(ev["sent"][i], ev["recv"][i])),
                {"name": name, "median_s": med, "occurrences": int(len(rows))})))
    # regions: pair begins and ends per (rank, thread)
    in_regions: list[tuple[float, TraceFinding]] = []
    for (rank, name), (starts, durs) in _region_durations(tl).items():
        if len(durs) < 10:
            continue
        med = float(np.median(durs))
        for j in _outliers(durs):
            in_regions.append((float(durs[j] - med), TraceFinding(
                "irregular", f"Irregular duration: rank {rank}'s region {name} at {units.seconds(starts[j])} took "
                f"{units.seconds(durs[j])}, against a median of {units.seconds(med)} over {len(durs)} visits.",
                rank, float(starts[j]), float(durs[j]), None, {"name": name, "median_s": med,
                                                               "occurrences": int(len(durs))})))
    return found, in_regions


def _region_durations(tl: Timeline) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]:
    ev = tl.ev
    idx = np.flatnonzero((ev["kind"] == reader.REGION_BEGIN) | (ev["kind"] == reader.REGION_END))
    out: dict[tuple[int, str], tuple[list[float], list[float]]] = {}
    stacks: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for i in idx:
        key = (int(ev["rank"][i]), int(ev["thread"][i]))
        if ev["kind"][i] == reader.REGION_BEGIN:
            stacks.setdefault(key, []).append((int(ev["fn"][i]), float(ev["t0"][i])))
        elif stacks.get(key):
            path, t0 = stacks[key].pop()
            name = tl.region_name(key[0], path)
            s, d = out.setdefault((key[0], name), ([], []))
            s.append(t0)
            d.append(float(ev["t0"][i]) - t0)
    return {k: (np.array(s), np.array(d)) for k, (s, d) in out.items()}


def large_gaps(tl: Timeline, top: int = TOP) -> list[TraceFinding]:
    """Times between consecutive MPI calls of a thread much longer than its usual gap: a phase
    without communication (compute, I/O, or a stall) that stands out."""
    ev = tl.ev
    calls = np.flatnonzero(ev["kind"] == reader.CALL)
    if len(calls) < 3:
        return []
    r, th = ev["rank"][calls], ev["thread"][calls]
    same = (r[1:] == r[:-1]) & (th[1:] == th[:-1])
    gap = ev["t0"][calls[1:]] - ev["t1"][calls[:-1]]
    found = []
    for rank in np.unique(r):
        sel = np.flatnonzero(same & (r[:-1] == rank))
        if len(sel) < 5:
            continue
        g = gap[sel]
        med = float(np.median(g))
        big = sel[(g > GAP_FACTOR * max(med, 1e-9)) & (g > MIN_GAP_S)]
        for j in big:
            a, b = calls[j], calls[j + 1]
            found.append(TraceFinding(
                "gap", f"Large gap: rank {rank} made no MPI call for {units.seconds(gap[j])} at "
                f"{units.seconds(ev['t1'][a])}, between {tl.functions[ev['fn'][a]]} and {tl.functions[ev['fn'][b]]} "
                f"(its median gap is {units.seconds(med)}).",
                int(rank), float(ev["t1"][a]), float(gap[j]), None, {"median_gap_s": med}))
    found.sort(key=lambda f: -f.duration_s)
    return found[:top]


def find(tl: Timeline) -> list[TraceFinding]:
    """All timeline findings, grouped by kind, the largest first within each."""
    return late_senders(tl) + late_receivers(tl) + collective_waits(tl) + irregular_durations(tl) + large_gaps(tl)


def within(found: list[TraceFinding], ranks: list[tuple[int, int]] | None,
           window: tuple[float, float] | None) -> list[TraceFinding]:
    """The findings of a run that an export of part of its trace shows: those of the ranks listed
    (filters.parse_ranks; None: every rank) that happened within the window (seconds; None: the
    whole run), in their order. They are the whole run's: a call is irregular against its
    function's median over the run, not over the part."""
    return [f for f in found if (not ranks or any(a <= f.rank <= b for a, b in ranks))
            and (window is None or window[0] <= f.time_s <= window[1])]
