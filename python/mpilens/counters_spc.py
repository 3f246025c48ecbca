"""Reader of the counters mode (SPC-style low-level counters, runtime/src/modes/counters/counters.c).

A run directory of the counters mode holds:
  counters/layout.json        names, types, offsets, bin rules, eager limits, pvars found or absent
  counters/rank-NNNNNN.bin    per-rank time series: 64-byte header, then one record per snapshot
                              (t_ns, final flag, then nv int64: deltas; levels, watermarks of the
                              interval and pvar levels as values)
  counters/rank-NNNNNN.json   per-rank totals at MPI_Finalize, per peer and per communicator
  live/rank-NNNNNN.spc        the live view: 64-byte header (with a sequence number that is odd
                              while the values are written) + nv int64, written while the job runs
Timers hold raw ticks; ticks_per_ns (layout of each rank) converts them, once, here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import _layout as L
from . import layout as paths
from .errors import RunDirectoryError

# layouts: runtime/spec/rundir.yaml, files counters_live and counters_series
LIVE_MAGIC, SERIES_MAGIC = L.MAGIC_COUNTERS_LIVE, L.MAGIC_COUNTERS_SERIES
LIVE_HDR = L.SPC_LIVE_HEADER  # magic version nv seq t_ns ticks_per_ns updates rank pid state period_ms
SERIES_HDR = L.SPC_SERIES_HEADER  # magic version nv rank period_ms ticks_per_ns records pad
SERIES_REC = L.SPC_SERIES_RECORD  # t_ns final check, then nv int64
SERIES_VERSION = 2  # its records carry a check (runtime/src/modes/counters/counters.c)
# the counters shown first, in this order (seed names without OMPI_SPC_)
MAIN = ["MPI_CALLS", "BYTES_SENT_USER", "BYTES_RECEIVED_USER", "MESSAGES_SENT_USER", "MESSAGES_RECEIVED_USER",
        "BYTES_SENT_MPI", "BYTES_RECEIVED_MPI", "COLLECTIVE_CALLS", "BYTES_PUT", "BYTES_GET", "EAGER_MESSAGES",
        "NOT_EAGER_MESSAGES", "UNEXPECTED", "POSTED_RECVQ", "MAX_POSTED_RECVQ", "MIN_POSTED_RECVQ", "RECVS_POSTED",
        "RECVS_COMPLETED", "RECV_POST_TO_COMPLETE_TIME"]
GROUP_OF = {"EAGER_MESSAGES": "eager", "NOT_EAGER_MESSAGES": "eager", "UNEXPECTED": "unexpected",
            "UNEXPECTED_PROBES": "unexpected"}


@dataclass
class Layout:
    """counters/layout.json as read: names, types, offsets and bins of the counters, pvars, live folder."""
    doc: dict[str, Any]
    by_name: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {c["name"]: c for c in self.doc["counters"]}

    @property
    def nv(self) -> int:
        """Number of values per record (the counters and pvar values)."""
        return int(self.doc["nv"])

    @property
    def groups(self) -> list[str]:
        """The counter groups that were on (MPILENS_COUNTERS)."""
        return list(self.doc.get("groups", []))

    def counter(self, name: str) -> dict[str, Any]:
        """The layout entry of a counter, by name (upper case or pvar name accepted); RunDirectoryError when
        there is none."""
        c = self.by_name.get(name) or self.by_name.get(name.upper()) or self.by_name.get("PVAR:" + name)
        if c is None:
            raise RunDirectoryError(f"no counter named {name!r} (see `mpilens counters RUNDIR --list`)")
        return c

    def available(self, name: str) -> bool:
        """Whether a counter was measured in this run (its group on; eager limit known)."""
        c = self.by_name.get(name)
        if c is None:
            return False
        if c["group"] not in self.groups:
            return False
        if c["group"] == "eager":
            e = self.doc.get("eager", {})
            return e.get("shm_limit") is not None or e.get("net_limit") is not None
        return True


def load_layout(rundir: Path) -> Layout:
    """Read counters/layout.json of a run directory; RunDirectoryError when it is missing or damaged."""
    path = paths.counters_layout_file(rundir)
    if not path.exists():
        raise RunDirectoryError(f"{rundir}: no {paths.relative('counters_layout')} (was the run made with --mode "
                                "counters?)")
    try:
        layout = Layout(json.loads(paths.read_regular(path).decode()))
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
        raise RunDirectoryError(f"{path} is damaged: {err}") from err
    # the live folder inside the run directory where it was written: this copy's own, wherever the
    # run directory is now (an MPILENS_LIVE_DIR elsewhere stays where the job keeps it)
    live = Path(str(layout.doc.get("live_dir", "")))
    own = Path(rundir).absolute() / Path(paths.relative("counters_live", rank=0)).parent
    if live.name == own.name and live.parent.resolve() != own.parent.resolve() and own.is_dir():
        layout.doc["live_dir"] = str(own)
    return layout


@dataclass
class Series:
    """One rank's time series: times (s since MPI_Init, end of each interval) and values [records, nv]."""

    rank: int
    t: np.ndarray
    values: np.ndarray
    final: np.ndarray
    ticks_per_ns: float
    cut: bool = False  # the file ends inside a record (the process was killed, or the file cut short)
    # records that fail their check (damaged): their values are unknown, the others' their own
    # (each record holds its own interval's deltas)
    damaged: np.ndarray | None = None

    def whole(self) -> np.ndarray:
        """Which records are whole (pass their check, or carry none: version 1)."""
        return np.ones(len(self.t), dtype=bool) if self.damaged is None else ~self.damaged


def read_series(path: Path, nv: int, problems: list[str]) -> Series:
    """Read one rank's counters time series (nv values per record); a record cut short is left out,
    a damaged one (its check fails) is marked and named in problems."""
    raw = paths.read_regular(path)
    if len(raw) < SERIES_HDR.size or raw[:8] != SERIES_MAGIC:
        raise RunDirectoryError(f"{path}: not a counters time series")
    _, version, fnv, rank, _, tpn, _, _ = SERIES_HDR.unpack_from(raw)
    if fnv != nv:
        raise RunDirectoryError(f"{path}: {fnv} counters, layout.json says {nv}")
    if version not in (1, SERIES_VERSION):
        raise RunDirectoryError(f"{path}: a time series of version {version}, which this mpilens cannot read")
    head = SERIES_REC.size // 8  # the record's head (t_ns, final, check) as int64 words, then the nv values
    rec = SERIES_REC.size + nv * 8
    n = (len(raw) - SERIES_HDR.size) // rec  # a record cut short by a killed process is left out
    a = np.frombuffer(raw, dtype="<i8", count=n * rec // 8, offset=SERIES_HDR.size).reshape(n, rec // 8)
    final = (a[:, 1] & 0xFFFFFFFF) != 0  # version 1: a u64, whose high half is 0
    damaged = None
    if version >= 2:  # each record's check (FNV-1a of the record with its check taken as 0)
        check = (a[:, 1] >> 32).astype(np.uint32)
        rows = a.view(np.uint8).reshape(n, rec).copy()
        rows[:, 12:16] = 0
        damaged = paths.fnv1a_rows(rows) != check
        if damaged.any():
            problems.append(f"{path.name}: {int(damaged.sum())} of {n} snapshots fail their check (damaged): "
                            "their intervals are unknown")
    return Series(rank, a[:, 0].astype(np.float64) * 1e-9, a[:, head:], final, float(tpn),
                  cut=(len(raw) - SERIES_HDR.size) % rec != 0, damaged=damaged)


@dataclass
class Counters:
    """The counters of a run: layout, per-rank totals and time series."""

    path: Path
    layout: Layout
    totals: dict[int, np.ndarray]
    ranks_doc: dict[int, dict[str, Any]]
    series: dict[int, Series]
    problems: list[str]

    @property
    def nranks(self) -> int:
        """Number of ranks of the run."""
        return int(self.layout.doc["nranks"])

    def ticks_per_ns(self, rank: int) -> float:
        """The timer rate of a rank (1.0 when unknown), which converts its raw timer values."""
        d = self.ranks_doc.get(rank, {})
        tpn = d.get("ticks_per_ns") or (self.series[rank].ticks_per_ns if rank in self.series else 0.0)
        return float(tpn) if tpn else 1.0

    def value(self, name: str, rank: int) -> int | float | None:
        """Total of a counter on a rank (timers in seconds); None when not measured."""
        c = self.layout.counter(name)
        if not self.layout.available(c["name"]) or rank not in self.totals:
            return None
        v = int(self.totals[rank][c["offset"]])
        if c["type"] == "timer":
            return v / self.ticks_per_ns(rank) * 1e-9
        return v

    def bins(self, name: str, rank: int) -> list[int]:
        """The per-bin totals of a binned counter on one rank."""
        c = self.layout.counter(name)
        return [int(self.totals[rank][i]) for i in c["bins"]]

    def matrix(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Rank x snapshot matrix of a counter (deltas per interval; levels and watermarks as values)
        and the mean end time of each snapshot interval (seconds since MPI_Init)."""
        c = self.layout.counter(name)
        off = c["offset"]
        n = max((len(s.t) for s in self.series.values()), default=0)
        m = np.full((self.nranks, n), np.nan)
        tt = np.full((self.nranks, n), np.nan)
        for r, s in self.series.items():
            col = s.values[:, off].astype(np.float64)
            if c["type"] == "timer":
                col = col / (s.ticks_per_ns or self.ticks_per_ns(r)) * 1e-9  # in a container the rate is in the totals
            whole = s.whole()
            m[r, : len(col)] = np.where(whole, col, np.nan)
            tt[r, : len(s.t)] = np.where(whole, s.t, np.nan)
        with np.errstate(all="ignore"):
            times = np.nanmean(tt, axis=0) if n else np.zeros(0)
        return m, times


def load(rundir: str | Path) -> Counters:
    """Read the counters of a run directory: layout, per-rank totals (from the live file when a rank left none)
    and time series; what is missing goes to problems."""
    rundir = Path(rundir)
    layout = load_layout(rundir)
    problems: list[str] = []
    totals: dict[int, np.ndarray] = {}
    docs: dict[int, dict[str, Any]] = {}
    series: dict[int, Series] = {}
    slots = live_slots(layout)
    # each family listed once (a container's index is read once, not once per rank)
    series_of = {paths.rank_of("counters_series", f): f for f in paths.files(rundir, "counters_series")}
    totals_of = {paths.rank_of("counters_totals", f): f for f in paths.files(rundir, "counters_totals")}
    for r in range(int(layout.doc["nranks"])):
        sp = series_of.get(r) or paths.path(rundir, "counters_series", rank=r)
        if sp.exists():
            try:
                series[r] = read_series(sp, layout.nv, problems)
                if series[r].cut:
                    problems.append(f"{paths.relative('counters_series', rank=r)} ends before the rank's last "
                                    "snapshot (cut short): its time series is shorter")
            except RunDirectoryError as err:
                problems.append(str(err))
            except OSError as err:
                problems.append(f"{paths.relative('counters_series', rank=r)}: cannot read ({err.strerror})")
        else:
            problems.append(f"{paths.relative('counters_series', rank=r)} is missing")
        jp = totals_of.get(r) or paths.path(rundir, "counters_totals", rank=r)
        if jp.exists():
            try:
                docs[r] = json.loads(paths.read_regular(jp, limit=256 << 20).decode())
                totals[r] = np.asarray(docs[r]["values"], dtype=np.int64)
                if totals[r].shape != (layout.nv,):
                    raise ValueError(f"{totals[r].size} values, layout.json says {layout.nv}")
                continue
            except (ValueError, KeyError, TypeError, OverflowError, RunDirectoryError) as err:
                docs.pop(r, None)
                totals.pop(r, None)
                problems.append(str(err) if isinstance(err, RunDirectoryError)
                                else f"{paths.relative('counters_totals', rank=r)} is damaged ({err})")
            except OSError as err:
                problems.append(f"{paths.relative('counters_totals', rank=r)}: cannot read ({err.strerror})")
        else:
            problems.append(f"{paths.relative('counters_totals', rank=r)} is missing (rank {r} did not reach "
                            "MPI_Finalize)")
        live = read_live_file(*live_place(layout, r, slots), nv=layout.nv)
        if live is not None:  # the last values the rank published
            totals[r] = live["values"]
            problems.append(f"rank {r}: totals taken from its live file")
    return Counters(rundir, layout, totals, docs, series, problems)


# ------------------------------------------------------------------------------------ live view
def live_slots(layout: Layout) -> dict[int, tuple[Path, int]]:
    """MPILENS_FILES=host: where each rank's live values are, (live/group-NNNNNN.spc, offset of the
    rank's slot), from the slots' headers; {} for a run with a live file per rank."""
    stride = int(layout.doc.get("live_slot_bytes") or 0)
    out: dict[int, tuple[Path, int]] = {}
    if stride <= 0:
        return out
    pattern = Path(paths.glob_pattern("counters_live_slots")).name
    for f in sorted(Path(layout.doc["live_dir"]).glob(pattern)):
        try:
            with open(f, "rb") as fh:
                size = fh.seek(0, 2)
                for at in range(0, size - LIVE_HDR.size + 1, stride):
                    fh.seek(at)
                    head = fh.read(LIVE_HDR.size)
                    if head[:8] == LIVE_MAGIC:
                        out[LIVE_HDR.unpack(head)[7]] = (f, at)
        except OSError:
            continue
    return out


def live_place(layout: Layout, rank: int, slots: dict[int, tuple[Path, int]] | None = None) -> tuple[Path, int]:
    """A rank's live values: (file, offset), its slot in a group's file or its own file."""
    if slots and rank in slots:
        return slots[rank]
    return paths.live_file(layout.doc["live_dir"], rank), 0


def read_live_file(path: Path, offset: int = 0, nv: int | None = None, tries: int = 50) -> dict[str, Any] | None:
    """One consistent read of a rank's live values at offset of path (its own file, or its slot in
    a group's), retried while the writer is mid-update."""
    try:
        with open(path, "rb") as f:
            for _ in range(tries):
                f.seek(offset)
                raw = f.read(LIVE_HDR.size + 8 * nv if nv is not None else -1)
                if len(raw) < LIVE_HDR.size or raw[:8] != LIVE_MAGIC:
                    return None
                _, _, fnv, seq, t_ns, tpn, updates, rank, pid, state, period = LIVE_HDR.unpack_from(raw)
                if nv is not None and fnv != nv:
                    return None
                if len(raw) < LIVE_HDR.size + 8 * fnv:
                    return None
                vals = np.frombuffer(raw, dtype="<i8", count=fnv, offset=LIVE_HDR.size).copy()
                seq_at = L.SPC_LIVE_HEADER_DTYPE.fields["seq"][1]  # read the sequence again: unchanged and even
                f.seek(offset + seq_at)
                seq2 = int(np.frombuffer(f.read(8), dtype="<u8")[0])
                if seq % 2 == 0 and seq == seq2:
                    return {"rank": rank, "pid": pid, "t_s": t_ns * 1e-9, "ticks_per_ns": tpn, "updates": updates,
                            "state": "finished" if state == 2 else "running", "period_ms": period, "values": vals}
                time.sleep(0.001)
    except OSError:
        return None
    return None


def read_live(rundir: str | Path) -> tuple[Layout, list[dict[str, Any]]]:
    """The live values of every rank that has published them."""
    rundir = Path(rundir)
    layout = load_layout(rundir)
    out = []
    slots = live_slots(layout)
    for r in range(int(layout.doc["nranks"])):
        v = read_live_file(*live_place(layout, r, slots), nv=layout.nv)
        if v is not None:
            out.append(v)
    return layout, out


def grid_remap(values: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Per-rank values laid out on a process grid of W x H (rank r at row r // W, column r % W)."""
    w, h = grid
    img = np.full((h, w), np.nan)
    for r, v in enumerate(values[: w * h]):
        img[r // w, r % w] = v
    return img


def parse_grid(text: str) -> tuple[int, int]:
    """Parse a process grid "WxH" (e.g. 8x5); RunDirectoryError when it is not one."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError as err:
        raise RunDirectoryError(f"--grid {text!r}: expected WxH, e.g. 8x5") from err
    if w < 1 or h < 1:
        raise RunDirectoryError(f"--grid {text!r}: both sizes must be positive")
    return w, h


def rank_totals(m: np.ndarray) -> np.ndarray:
    """Sum over snapshots per rank; NaN (not zero) for a rank with no measured snapshot."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(m).all(axis=1), np.nan, np.nansum(m, axis=1))
