"""PAPI counts of a run made with `--mode papi` (papi/rank-NNNNNN.json), derived metrics and the
compute-phase imbalance in work versus time.

Each rank's file holds, per region path, the counts of the compute between MPI calls
("compute", with its time) and of the MPI calls made in it ("mpi"), and per MPI function the
counts inside its calls. With MPILENS_PAPI_READ=regions the counters are read at region
boundaries only, so "compute" holds everything (MPI included) and "mpi" is zero.

The imbalance analysis asks the question of seeds/000, chapter 4: a rank whose compute takes
longer than the others', does it do more work (more instructions) or the same work more slowly
(fewer instructions per second)? Work is PAPI_TOT_INS where the machine counts it. Without it
(a virtual machine without a virtual PMU), perf::TASK-CLOCK is used: the CPU time the rank got,
which separates "needed more CPU time" from "got less CPU" (oversubscription, preemption), but
not a rank that runs more slowly on its CPU (cache misses, frequency).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _layout, layout, recover
from . import meta as meta_file
from .errors import RunDirectoryError

SCHEMA = _layout.SCHEMA_PAPI
ROOT_NAME = "(outside regions)"
WORK_EVENTS = ("PAPI_TOT_INS", "perf::TASK-CLOCK")
#: compute-time imbalance (max / mean) below which the ranks count as balanced
BALANCED = 1.10
#: regions whose compute is less than this share of the run's are not judged (too short: noise)
MIN_SHARE = 0.05


@dataclass
class Region:
    """Counts of one region path on one rank."""

    path: str
    compute_s: float
    phases: int
    compute: list[int]
    mpi: list[int]


@dataclass
class RankCounts:
    """One rank's papi file."""

    rank: int
    events: list[str]
    read: str
    reads: int
    read_cost_ns: float
    threads: int
    unread_calls: int  # MPI calls not read on their own (MPILENS_PAPI_MIN_US)
    regions: dict[str, Region]
    functions: dict[str, dict[str, Any]]

    @property
    def compute_s(self) -> float:
        """Time of the compute between MPI calls, all regions."""
        return sum(r.compute_s for r in self.regions.values())

    def compute(self) -> list[int]:
        """Counts of the compute between MPI calls, all regions."""
        return [sum(r.compute[i] for r in self.regions.values()) for i in range(len(self.events))]

    def mpi(self) -> list[int]:
        """Counts inside the MPI calls, all regions."""
        return [sum(r.mpi[i] for r in self.regions.values()) for i in range(len(self.events))]


@dataclass
class Verdict:
    """Compute-phase imbalance of one scope (the whole run or one region)."""

    scope: str
    time_s: list[float | None]
    work: list[float | None]
    work_event: str | None
    time_imbalance: float | None  # max / mean of time
    work_imbalance: float | None  # max / mean of work
    slowest_rank: int | None
    efficiency: list[float | None]  # work per second, relative to the mean over ranks
    kind: str  # "balanced", "work", "efficiency" or "unknown"
    message: str

    def to_dict(self) -> dict[str, Any]:
        """Return the verdict as plain JSON data."""
        return dict(self.__dict__)


@dataclass
class PapiRun:
    """The papi files of a run."""

    path: Path
    nranks: int
    events: list[str]
    read: str
    min_us: int
    multiplex: bool
    refused: str
    off_reason: str
    ranks: list[RankCounts | None]
    problems: list[str] = field(default_factory=list)

    def region_paths(self) -> list[str]:
        """Every region path seen on any rank, in order of first appearance."""
        seen: dict[str, None] = {}
        for r in self.ranks:
            for p in r.regions if r else ():
                seen.setdefault(p, None)
        return list(seen)

    def has(self, event: str) -> bool:
        """Whether the run counted event."""
        return event in self.events

    def value(self, counts: list[int], event: str) -> int | None:
        """The count of event in a counts list of this run, or None when it was not counted."""
        return counts[self.events.index(event)] if event in self.events else None

    def derived(self, counts: list[int], seconds: float | None = None) -> dict[str, float]:
        """Metrics derived from the counts of one scope: IPC and miss rates when the events exist,
        the CPU share of the time (TASK-CLOCK / time) when `seconds` is given."""
        v = {e: counts[i] for i, e in enumerate(self.events)}
        out: dict[str, float] = {}
        ins, cyc = v.get("PAPI_TOT_INS"), v.get("PAPI_TOT_CYC")
        if ins is not None and cyc:
            out["IPC"] = ins / cyc
        for miss in ("PAPI_L1_DCM", "PAPI_L2_TCM", "PAPI_L3_TCM"):
            if miss in v and ins:
                out[f"{miss[5:]} per 1k ins"] = 1000.0 * v[miss] / ins
        if "PAPI_L1_DCM" in v and v.get("PAPI_L1_DCA"):
            out["L1D miss rate"] = v["PAPI_L1_DCM"] / v["PAPI_L1_DCA"]
        if "perf::TASK-CLOCK" in v and seconds:
            out["CPU share"] = v["perf::TASK-CLOCK"] * 1e-9 / seconds
        return out

    def judged_regions(self) -> list[str]:
        """Region paths long enough for an imbalance verdict (at least MIN_SHARE of the compute time)."""
        total = sum(r.compute_s for r in self.ranks if r)
        out = []
        for p in self.region_paths():
            t = sum(r.regions[p].compute_s for r in self.ranks if r and p in r.regions)
            if total > 0 and t >= MIN_SHARE * total:
                out.append(p)
        return out

    def work_event(self) -> str | None:
        """The event used as the measure of work: PAPI_TOT_INS, else perf::TASK-CLOCK, else None."""
        return next((e for e in WORK_EVENTS if e in self.events), None)

    def imbalance(self, scope: str | None = None) -> Verdict:
        """Return the compute-phase imbalance of the whole run (scope None) or one region path."""
        ev = self.work_event()
        times: list[float | None] = []
        work: list[float | None] = []
        for r in self.ranks:
            if r is None:
                times.append(None)
                work.append(None)
                continue
            regs = list(r.regions.values()) if scope is None else [x for x in r.regions.values() if x.path == scope]
            # a rank that read nothing (no event could be counted) has no compute time: unknown, not 0
            times.append(sum(x.compute_s for x in regs) if regs else None)
            work.append(float(sum(x.compute[self.events.index(ev)] for x in regs)) if ev and regs else None)
        return _verdict(scope or "whole run", times, work, ev)


def _ratio(vals: list[float | None]) -> tuple[float | None, int | None]:
    got = [(v, i) for i, v in enumerate(vals) if v is not None]
    if not got:
        return None, None
    mean = sum(v for v, _ in got) / len(got)
    top, rank = max(got)
    return (top / mean if mean > 0 else None), rank


def _verdict(scope: str, times: list[float | None], work: list[float | None], ev: str | None) -> Verdict:
    t_imb, slow = _ratio(times)
    w_imb, _ = _ratio(work) if ev else (None, None)
    rates = [w / t if w is not None and t else None for w, t in zip(work, times)]
    got = [x for x in rates if x is not None]
    mean_rate = sum(got) / len(got) if got else 0.0
    eff = [x / mean_rate if x is not None and mean_rate > 0 else None for x in rates]
    what = "instruction count" if ev == "PAPI_TOT_INS" else "CPU time (perf::TASK-CLOCK)"
    if t_imb is None or len([t for t in times if t is not None]) < 2:
        kind, msg = "unknown", f"{scope}: fewer than two ranks with counts"
    elif t_imb < BALANCED:
        kind, msg = "balanced", f"{scope}: compute time is balanced (max/mean {t_imb:.2f})"
    elif ev is None or w_imb is None:
        kind, msg = "unknown", (f"{scope}: compute time max/mean {t_imb:.2f} (rank {slow}), but no work event "
                                "(PAPI_TOT_INS or perf::TASK-CLOCK) was counted")
    elif w_imb - 1.0 >= 0.5 * (t_imb - 1.0):
        kind = "work"
        counted = [w for w in work if w is not None]
        rel = "n/a" if work[slow] is None else f"{work[slow] / (sum(counted) / len(counted)):.2f}x"
        msg = (f"{scope}: work imbalance: rank {slow} takes {t_imb:.2f}x the mean compute time and its {what} is "
               f"{rel} the mean: it has more work")
    else:
        kind = "efficiency"
        msg = (f"{scope}: efficiency imbalance: rank {slow} takes {t_imb:.2f}x the mean compute time for about the "
               f"same {what} (max/mean {w_imb:.2f}); it does the same work more slowly "
               f"({'n/a' if eff[slow] is None else f'{eff[slow]:.2f}x'} the mean rate)")
    return Verdict(scope, times, work, ev, t_imb, w_imb, slow, eff, kind, msg)


def load(rundir: Path) -> PapiRun:
    """Read the papi files of a run directory.

    Raises:
        RunDirectoryError: the run has no papi/ folder (not run with --mode papi) or no readable file.
    """
    rundir = Path(rundir)
    folder = layout.papi_dir(rundir)
    meta = meta_file.load(rundir, []) or {}
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    problems: list[str] = []
    files: list[Any] = layout.papi_files(rundir) if folder.is_dir() else []
    have = {layout.rank_of("papi", f) for f in files}
    # the ranks killed before they wrote theirs: their counts from their statistics files
    recovered = recover.recover_papi(rundir, {r for r in have if r is not None}, problems) \
        if "papi" in str(config.get("MPILENS_MODE", "")).split(",") else []
    if not folder.is_dir() and not recovered:
        raise RunDirectoryError(f"{rundir} has no {folder.name}/ folder: run the job with `mpilens run --mode papi`")
    files += recovered
    nranks = meta.get("nranks", 0)
    parsed: dict[int, dict[str, Any]] = {}
    for f in files:
        try:
            # a regular file only (a FIFO would hang); a recovered rank comes as its bytes
            d = json.loads(f.read_bytes() if isinstance(f, recover.Virtual) else layout.read_regular(f).decode())
            if isinstance(f, recover.Virtual) and isinstance(d, dict):
                # the run's settings, as the rank would have written them
                d.update(read=config.get("MPILENS_PAPI_READ", "calls"), min_us=_int(config.get("MPILENS_PAPI_MIN_US")),
                         multiplex=config.get("MPILENS_PAPI_MULTIPLEX") not in (None, "", "0"))
                problems.append(f"rank {d.get('rank')}: its PAPI counts recovered from {f.name} (it ended without "
                                "writing its papi file): up to its last read")
            if not isinstance(d, dict):
                raise ValueError("not a JSON object")
            if d.get("schema") != SCHEMA:
                raise ValueError(f"schema is {d.get('schema')!r}, expected {SCHEMA!r}")
            parsed[int(d["rank"])] = d
        except (OSError, ValueError, KeyError, TypeError, RunDirectoryError) as err:
            problems.append(f"{f}: unreadable ({err})")
    if not parsed:
        raise RunDirectoryError(f"{folder} holds no readable rank file" + (f": {problems[0]}" if problems else ""))
    nranks = max(nranks, max(parsed) + 1)
    written = [r for r in parsed if r in have]  # the run's settings from a rank that wrote its file
    first = parsed[min(written or parsed)]
    events = list(first.get("events", []))
    ranks: list[RankCounts | None] = []
    for r in range(nranks):
        d = parsed.get(r)
        if d is None:
            problems.append(f"rank {r}: no {layout.relative('papi', rank=r)} (the rank did not reach MPI_Finalize?)")
            ranks.append(None)
            continue
        try:
            regions = {}
            for x in d.get("regions", []):
                path = x["path"] or ROOT_NAME
                regions[path] = Region(path, float(x["compute_s"]), int(x["phases"]), list(x["compute"]), list(x["mpi"]))
            ranks.append(RankCounts(r, list(d.get("events", [])), d.get("read", "calls"), int(d.get("reads", 0)),
                                    float(d.get("read_cost_ns", 0.0)), int(d.get("threads", 0)),
                                    int(d.get("unread_calls", 0)), regions,
                                    dict(d.get("functions", {}))))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            problems.append(f"rank {r}: {layout.relative('papi', rank=r)} is damaged ({err}); the rank is left out")
            ranks.append(None)
    return PapiRun(rundir, nranks, events, first.get("read", "calls"), int(first.get("min_us", 0)),
                   bool(first.get("multiplex")),
                   first.get("refused", ""), first.get("off_reason", ""), ranks, problems)


def summary(run: PapiRun) -> dict[str, Any]:
    """Return everything `mpilens papi --json` prints: per rank, per region, per function, imbalance."""
    per_rank = []
    for r in run.ranks:
        if r is None:
            per_rank.append(None)
            continue
        c = r.compute()
        per_rank.append({"rank": r.rank, "compute_s": r.compute_s if r.regions else None,  # nothing read: unknown
                         "compute": dict(zip(run.events, c)),
                         "mpi": dict(zip(run.events, r.mpi())), "derived": run.derived(c, r.compute_s),
                         "reads": r.reads, "unread_calls": r.unread_calls, "read_cost_ns": r.read_cost_ns,
                         "threads": r.threads})
    regions = []
    judged = run.judged_regions()
    for p in run.region_paths():
        regs = [r.regions.get(p) for r in run.ranks if r]
        regs = [x for x in regs if x is not None]
        c = [sum(x.compute[i] for x in regs) for i in range(len(run.events))]
        m = [sum(x.mpi[i] for x in regs) for i in range(len(run.events))]
        t = sum(x.compute_s for x in regs)
        regions.append({"path": p, "ranks": len(regs), "compute_s": t, "phases": sum(x.phases for x in regs),
                        "compute": dict(zip(run.events, c)), "mpi": dict(zip(run.events, m)),
                        "derived": run.derived(c, t),
                        "imbalance": run.imbalance(p).to_dict() if p in judged else None})
    functions: dict[str, dict[str, Any]] = {}
    for r in run.ranks:
        for name, f in (r.functions if r else {}).items():
            e = functions.setdefault(name, {"time_s": 0.0, "counts": [0] * len(run.events)})
            e["time_s"] += float(f["time_s"])
            e["counts"] = [a + b for a, b in zip(e["counts"], f["counts"])]
    return {"run": str(run.path), "nranks": run.nranks, "events": run.events, "read": run.read, "min_us": run.min_us,
            "multiplex": run.multiplex, "refused": run.refused or None, "off_reason": run.off_reason or None,
            "work_event": run.work_event(), "ranks": per_rank, "regions": regions,
            "functions": {k: {"time_s": v["time_s"], "counts": dict(zip(run.events, v["counts"]))}
                          for k, v in sorted(functions.items(), key=lambda kv: -kv[1]["time_s"])},
            "imbalance": run.imbalance().to_dict(), "problems": run.problems}


def _int(text: Any) -> int:
    """A setting's integer value (0 when it has none)."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0
