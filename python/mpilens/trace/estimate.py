"""How big a trace of a run would be, predicted from its profile: `mpilens trace --estimate RUN`.

A trace records an event per MPI call and per completion of a nonblocking operation, and two per
region visit; the profile counts all of these per rank. The events' size is data-dependent (the
format leaves out a peer, tag, byte count or call site repeated from the function's previous call,
docs/run-directory.md), so bytes per call, per operation, per region visit and per rank (block
heads, the trailer) are fitted on traces of the examples, and checked on applications the fit never
saw: bench/trace_size.py prints both, bench/RESULTS.md has the figures these constants come from.
The writer's CPU and the exports' sizes are per event, from the same runs.

A profile cannot say how often a program repeats its peers and tags (NetPIPE repeats them on every
call, a ring that numbers its messages by tag never), so when the run holds a trace of part of
itself (a window, some ranks, some functions: a few seconds of trace beside the whole run's
profile), the estimate is calibrated on it: each rank's events cost what they cost there, relative
to the fit (its Composition: reader.composition), and its head and trailer what its file's do.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .._layout import FunctionKeys, ProfileKeys, RegionKeys

# the features of one rank, in this order; bytes per feature (bench/trace_size.py, Open MPI 4.1,
# 2026-11-28: the fit on eight examples, within 11 % of each; held out, LAMMPS in.indent +11.5 %,
# NetPIPE +32.7 %: its every call repeats the previous one's peer, tag and size, the least an event
# takes, which a profile cannot tell from calls that change them; hence also the least a trace
# takes). A rank's own part is its file's head (the names of every function) and trailer
FEATURES = ("calls", "operations", "region_events", "rank")
BYTES = np.array([15.93, 22.70, 4.73, 44109.0])
# the least an event takes: its fixed part alone, when its peers, tags, byte counts and call site
# are those of the function's previous call (NetPIPE's: 12.0 bytes per event)
MIN_EVENT_BYTES = 12.0
# per event of a large trace (LAMMPS, the same runs): the writer thread's CPU, each export's bytes
WRITER_NS_PER_EVENT = 6.0
EXPORT_BYTES_PER_EVENT = {"perfetto": 32.0, "chrome": 172.0, "parquet": 14.0, "otf2": 27.0}

_NONBLOCKING = re.compile(r"^MPI_I[a-z]")


def features(profile: dict[str, Any]) -> np.ndarray:
    """The (ranks x FEATURES) counts a trace's size follows, from a profile.json document."""
    P, F = ProfileKeys, FunctionKeys
    n = int(profile[P.NRANKS])
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    out[:, 3] = 1.0
    for name, f in profile.get(P.FUNCTIONS, {}).items():
        calls = np.asarray(f[F.CALLS], dtype=np.float64)
        out[:, 0] += calls
        # a nonblocking operation (MPI_Isend, MPI_Iallreduce, MPI_Iread...) completes once more:
        # its completion is an event of its own (MPI_Iprobe, MPI_Info_*, MPI_Intercomm_* are not)
        if _NONBLOCKING.match(name) and f.get(F.CLASS) in ("p2p", "collective", "rma", "io"):
            out[:, 1] += calls
    for region in profile.get(P.REGIONS, []):
        out[:, 2] += 2 * np.asarray(region.get(RegionKeys.VISITS, [0] * n), dtype=np.float64)
    return out


def trace_bytes(features_of_rank: np.ndarray) -> float:
    """The predicted bytes of one rank's trace file."""
    return float(np.asarray(features_of_rank, dtype=np.float64) @ BYTES)


def events(features_of_rank: np.ndarray) -> float:
    """The predicted events of one rank's trace (calls, completions, region begins and ends)."""
    return float(features_of_rank[0] + features_of_rank[1] + features_of_rank[2])


def _event_bytes(counts: np.ndarray) -> float:
    """What the fit says calls, operations and region events (the first three FEATURES) take."""
    return float(np.asarray(counts[:3], dtype=np.float64) @ BYTES[:3])


def calibration(sample: list[Any]) -> dict[str, Any] | None:
    """How the events of a run's own trace (each rank's reader.Composition) compare with the fit:
    per rank the ratio of their bytes to what the fit says they take, and the file's other bytes;
    None when the trace holds no event."""
    ranks = {}
    for c in sample:
        fitted = _event_bytes(np.array([c.calls, c.completions, c.region_events]))
        if fitted > 0:
            ranks[c.rank] = (c.event_bytes / fitted, c.other_bytes)
    if not ranks:
        return None
    events_ = sum(c.calls + c.completions + c.region_events for c in sample)
    fitted = sum(_event_bytes(np.array([c.calls, c.completions, c.region_events])) for c in sample)
    return {"ranks": ranks, "ratio": sum(c.event_bytes for c in sample) / fitted,
            "other_bytes": float(np.median([o for _, o in ranks.values()])), "events": events_,
            "bytes_per_event": sum(c.event_bytes for c in sample) / events_}


def estimate(profile: dict[str, Any], wall_time_s: float | None = None,
             sample: list[Any] | None = None) -> dict[str, Any]:
    """The prediction for a run like this one traced: per rank and in total, bytes, events, the
    writer's CPU (and its share of the run's wall time when given) and each export's size.
    `sample`: the Composition of each rank's file of a trace of part of the run, to calibrate on
    (a rank not in it takes the others' ratio)."""
    feats = features(profile)
    cal = calibration(sample or [])

    def bytes_of(r: int) -> float:
        if cal is None:
            return trace_bytes(feats[r])
        ratio, other = cal["ranks"].get(r, (cal["ratio"], cal["other_bytes"]))
        return other + ratio * _event_bytes(feats[r])

    per_rank = [{"rank": r, "events": events(feats[r]), "bytes": bytes_of(r),
                 "bytes_at_least": events(feats[r]) * MIN_EVENT_BYTES + BYTES[3]} for r in range(len(feats))]
    total_events = sum(x["events"] for x in per_rank)
    total = sum(x["bytes"] for x in per_rank)
    cpu = total_events * WRITER_NS_PER_EVENT * 1e-9
    out: dict[str, Any] = {
        "ranks": per_rank,
        "events": total_events,
        "bytes": total,
        "bytes_at_least": sum(x["bytes_at_least"] for x in per_rank),
        "bytes_per_event": total / total_events if total_events else None,
        "writer_cpu_s": cpu,
        "exports": {k: v * total_events for k, v in EXPORT_BYTES_PER_EVENT.items()},
        # what it was calibrated on: the run's own trace (its events and their bytes), else None (the fit)
        "calibrated_on": None if cal is None else {"events": cal["events"], "ranks": len(cal["ranks"]),
                                                   "bytes_per_event": cal["bytes_per_event"]},
    }
    if wall_time_s:
        out["writer_cpu_share"] = cpu / (wall_time_s * len(per_rank))
    return out


# classes whose calls can be left out of a trace without losing a message or a collective: their
# calls carry no data (a completion belongs to the function that started its operation)
_LEAVE_OUT_FIRST = ("probe", "completion", "setup", "other")


def suggest(profile: dict[str, Any], under_bytes: float, wall_time_s: float | None = None,
            sample: list[Any] | None = None) -> list[dict[str, Any]]:
    """Filters that each bring the predicted trace under under_bytes (docs/trace.md, "Trace only
    what is wanted"): functions that carry no data left out (the largest first), the first ranks
    only, and a window in the middle of the run (its events taken as spread evenly over the run).
    Each is {"setting", "value", "bytes", "note"}; none when the trace fits already. `sample`: as
    estimate's."""
    est = estimate(profile, sample=sample)
    cal = calibration(sample or [])
    per_call = BYTES[0] * (cal["ratio"] if cal else 1.0)
    total = est["bytes"]
    if total <= under_bytes:
        return []
    n = int(profile[ProfileKeys.NRANKS])
    out: list[dict[str, Any]] = []
    # functions: their calls' bytes (an operation's completion stays with the function that started it)
    cost = []
    for name, f in profile.get(ProfileKeys.FUNCTIONS, {}).items():
        if f.get(FunctionKeys.CLASS) in _LEAVE_OUT_FIRST:
            cost.append((float(np.sum(np.asarray(f[FunctionKeys.CALLS], dtype=np.float64))) * per_call, name))
    left, names = total, []
    for b, name in sorted(cost, reverse=True):
        if left <= under_bytes or b <= 0:
            break
        left -= b
        names.append(name)
    if names and left <= under_bytes:
        out.append({"setting": "MPILENS_TRACE_EXCLUDE", "value": ",".join(names), "bytes": left,
                    "note": "calls that carry no data; every message and collective stays"})
    # ranks: the first k whose traces fit
    per = [x["bytes"] for x in est["ranks"]]
    k, acc = 0, 0.0
    while k < n and acc + per[k] <= under_bytes:
        acc += per[k]
        k += 1
    if k >= 1:
        out.append({"setting": "MPILENS_TRACE_RANKS", "value": "0" if k == 1 else f"0-{k - 1}", "bytes": acc,
                    "note": f"{k} of {n} ranks; messages to the others have one end"})
    # a window: the share of the run that fits, in its middle
    if wall_time_s:
        fixed = (cal["other_bytes"] if cal else BYTES[3]) * n
        share = max(0.0, (under_bytes - fixed) / max(total - fixed, 1.0))
        if share > 0:
            length = wall_time_s * share
            start = (wall_time_s - length) / 2
            out.append({"setting": "MPILENS_TRACE_WINDOW", "value": f"{start:.3g}:{start + length:.3g}",
                        "bytes": fixed + (total - fixed) * share,
                        "note": f"{length:.3g} s of {wall_time_s:.3g}, if the calls are spread evenly over the run"})
    return out
