"""Memory mode: read memory/rank-NNNNNN.bin and tell MPI's memory from the application's.

The runtime (runtime/src/modes/memory/memory.c) writes, per rank, a 64-byte header and 64-byte records:
residency samples (PSS, RSS, with the allocation counters of the moment), the residency before and
after each MPI call (smaps method), region and MPI_Pcontrol marks, and at the end a table of what
each MPI function allocated and freed. This module turns them into per-rank timelines

    total(t) = PSS(t) - tool(t)        the process without the tool's own memory
    mpi(t)   = MPI's part (below)
    app(t)   = total(t) - mpi(t)       the application's part

with mpi(t), as in memnesia, starting with the residency change inside MPI_Init (the loader maps
the MPI library's components itself, no interposer sees them), and then:
  fast   + the net bytes of heap blocks allocated inside MPI calls since MPI_Init, and the change of
           the resident bytes of the mappings MPI made (mincore); shared mappings count for 1/k,
           k being the number of ranks on the host
  smaps  + the running sum of the PSS changes measured inside every MPI call

and derives what `mpilens memory` and the HTML report show: per-rank and aggregate timelines, the
peak table (mean and standard deviation over ranks, PSS and RSS), MPI memory by function and the
change of memory within each region or MPI_Pcontrol extent.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import _layout as L
from . import layout
from . import meta as meta_file
from .errors import RunDirectoryError

# the file's layout (runtime/spec/rundir.yaml, file `memory`): a header, then records whose last 32
# bytes are named after their kind (sample_*, call_*, func_*, mark_name)
HEADER, RECORD, MAGIC = L.MEM_HEADER_DTYPE, L.MEM_RECORD_DTYPE, L.MAGIC_MEMORY
CHECKED = RECORD.fields["check"][1]  # the bytes a record's check covers
# the 64-byte records of version 1 files (MLMEM01): the same, without check and zero
RECORD_V1 = np.dtype({"names": [n for n in RECORD.names if n not in ("check", "zero")],
                      "formats": [RECORD.fields[n][0] for n in RECORD.names if n not in ("check", "zero")],
                      "offsets": [RECORD.fields[n][1] for n in RECORD.names if n not in ("check", "zero")],
                      "itemsize": CHECKED})
SAMPLE, INIT_BEGIN, INIT_END, FINAL = L.MEM_KIND_SAMPLE, L.MEM_KIND_INIT_BEGIN, L.MEM_KIND_INIT_END, L.MEM_KIND_FINAL
CALL, MARK, FUNC, END, FINI_BEGIN = L.MEM_KIND_CALL, L.MEM_KIND_MARK, L.MEM_KIND_FUNC, L.MEM_KIND_END, L.MEM_KIND_FINI_BEGIN
KINDS = (SAMPLE, INIT_BEGIN, INIT_END, FINAL, CALL, MARK, FUNC, END, FINI_BEGIN)
MARK_BEGIN, MARK_END, MARK_PCONTROL = L.MEM_MARK_BEGIN, L.MEM_MARK_END, L.MEM_MARK_PCONTROL
METHODS = tuple(L.MEM_METHOD_NAMES[i] for i in sorted(L.MEM_METHOD_NAMES))
MAX_POINTS = 2000  # points per timeline in JSON documents and charts


@dataclass
class RankMemory:
    """The memory timeline of one rank (bytes; times in seconds since its MPI_Init)."""

    rank: int
    method: str
    period_ms: int
    rollup: bool
    t: np.ndarray
    pss: np.ndarray      # the process, tool excluded
    rss: np.ndarray
    mpi: np.ndarray      # MPI's part of pss
    mpi_rss: np.ndarray  # MPI's part with RSS changes (smaps) or the same allocation counts (fast)
    tool: np.ndarray
    init_pss: int        # residency change inside MPI_Init
    functions: dict[str, dict[str, int]]
    marks: list[dict[str, Any]]
    ended: str | None    # how the process ended, None when the file has no end record
    problems: list[str] = field(default_factory=list)

    @property
    def app(self) -> np.ndarray:
        """The application's part: the process minus MPI."""
        return self.pss - self.mpi

    def peak(self, series: str) -> float | None:
        """Highest value of a series (pss, rss, mpi, mpi_rss, app, tool), None without samples."""
        v = getattr(self, series)
        return float(v.max()) if len(v) else None

    def at(self, series: str, t: float) -> float | None:
        """Value of a series at the first point at or after time t (the sample a mark takes)."""
        v = getattr(self, series)
        i = int(np.searchsorted(self.t, t, side="left"))
        if not len(v):
            return None
        return float(v[min(i, len(v) - 1)])


@dataclass
class MemoryRun:
    """The memory of every rank of a run."""

    path: Path
    nranks: int
    method: str
    ranks: list[RankMemory]
    local: dict[int, int]  # ranks on the host of each rank
    problems: list[str]

    # ------------------------------------------------------------------ analyses
    def peaks(self) -> list[dict[str, Any]]:
        """Per-process peaks, mean and standard deviation over ranks (memnesia's Tables 4.4/4.5)."""
        rows = []
        for label, series in (("MPI (PSS)", "mpi"), ("MPI (RSS)", "mpi_rss"), ("application (PSS)", "app"),
                              ("total (PSS)", "pss"), ("total (RSS)", "rss"), ("tool (PSS)", "tool")):
            vals = [p for r in self.ranks if (p := r.peak(series)) is not None]
            rows.append({"metric": label, "series": series, "ranks": len(vals),
                         "mean": float(np.mean(vals)) if vals else None,
                         "std": float(np.std(vals, ddof=1)) if len(vals) > 1 else None,  # one rank: no spread to tell
                         "min": float(min(vals)) if vals else None, "max": float(max(vals)) if vals else None})
        return rows

    def peak(self, series: str) -> dict[str, Any]:
        """One row of peaks() by series name."""
        return next(r for r in self.peaks() if r["series"] == series)

    def by_function(self) -> list[dict[str, Any]]:
        """What each MPI function allocated and freed, summed over ranks, largest net first."""
        total: dict[str, Counter] = {}
        for r in self.ranks:
            for name, v in r.functions.items():
                total.setdefault(name, Counter()).update(v)
        rows = []
        for name, c in total.items():
            rows.append({"function": name, "allocated": int(c["allocated"]), "freed": int(c["freed"]),
                         "net": int(c["allocated"] - c["freed"]), "allocations": int(c["allocations"]),
                         "frees": int(c["frees"]), "shared": int(c["shared"]), "shm_segments": int(c["shm"]),
                         "pss_grown": int(c["pss_grown"]), "pss_shrunk": int(c["pss_shrunk"]),
                         "pss_net": int(c["pss_grown"] - c["pss_shrunk"])})
        key = "pss_net" if self.method == "smaps" else "net"
        rows.sort(key=lambda r: (-r[key], -r["allocated"], r["function"]))
        return rows

    def function(self, name: str) -> dict[str, Any] | None:
        """The row of by_function() of one MPI function, or None."""
        return next((r for r in self.by_function() if r["function"] == name), None)

    def aggregate(self, points: int = 400) -> dict[str, np.ndarray]:
        """The memory of the job over time: every rank's value at its last point before t, summed."""
        ends = [float(r.t[-1]) for r in self.ranks if len(r.t)]
        grid = np.linspace(0.0, max(ends) if ends else 0.0, points)
        out = {"t": grid}
        for series in ("pss", "mpi", "app", "rss"):
            acc = np.zeros(points)
            for r in self.ranks:
                if not len(r.t):
                    continue
                v = getattr(r, series)
                i = np.searchsorted(r.t, grid, side="right") - 1
                acc += np.where(i >= 0, v[np.clip(i, 0, len(v) - 1)], 0.0)
            out[series] = acc
        return out

    def extents(self) -> list[dict[str, Any]]:
        """Memory change within each region (and between MPI_Pcontrol marks), mean over ranks."""
        spans: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
        for r in self.ranks:
            stack: list[dict[str, Any]] = []
            pc: dict[str, Any] | None = None
            for m in r.marks:
                if m["what"] == "begin":
                    stack.append(m)
                elif m["what"] == "end" and stack:
                    b = stack.pop()
                    spans.setdefault(("region", b["name"]), []).append(self._span(r, b["t"], m["t"]))
                elif m["what"] == "pcontrol":
                    if pc is not None:
                        spans.setdefault(("pcontrol", f"level {pc['level']}"), []).append(self._span(r, pc["t"], m["t"]))
                    pc = m
        rows = []
        for (kind, name), vals in spans.items():
            a = np.array(vals)
            rows.append({"kind": kind, "name": name, "instances": len(vals), "duration_s": float(a[:, 0].mean()),
                         "total_change": float(a[:, 1].mean()), "mpi_change": float(a[:, 2].mean()),
                         "app_change": float(a[:, 1].mean() - a[:, 2].mean()), "mpi_peak": float(a[:, 3].mean())})
        return rows

    @staticmethod
    def _span(r: RankMemory, t0: float, t1: float) -> tuple[float, float, float, float]:
        sel = (r.t >= t0) & (r.t <= t1 + 1e-9)
        peak = float(r.mpi[sel].max()) if sel.any() else (r.at("mpi", t0) or 0.0)
        return (t1 - t0, (r.at("pss", t1) or 0.0) - (r.at("pss", t0) or 0.0),
                (r.at("mpi", t1) or 0.0) - (r.at("mpi", t0) or 0.0), peak)

    def to_dict(self, points: int = MAX_POINTS) -> dict[str, Any]:
        """A JSON-ready document of everything `mpilens memory` shows."""
        agg = self.aggregate()
        return {"schema": "mpilens.memory/1", "run": str(self.path), "nranks": self.nranks, "method": self.method,
                "ranks_read": len(self.ranks), "problems": self.problems, "peaks": self.peaks(),
                "functions": self.by_function(), "extents": self.extents(),
                "aggregate": {k: [round(float(x), 6 if k == "t" else 0) for x in v] for k, v in agg.items()},
                "ranks": [{"rank": r.rank, "ended": r.ended, "samples": int(len(r.t)), "init_mpi": r.init_pss,
                           "peak_mpi": r.peak("mpi"), "peak_app": r.peak("app"), "peak_pss": r.peak("pss"),
                           "peak_rss": r.peak("rss"), "tool": r.peak("tool"), "problems": r.problems,
                           "timeline": thin(r, points)} for r in self.ranks]}


def thin(r: RankMemory, points: int) -> dict[str, list[float]]:
    """Timeline of a rank with at most `points` points, keeping each bucket's highest MPI value."""
    n = len(r.t)
    idx = np.arange(n)
    if n > points:
        edges = np.linspace(0, n, points + 1).astype(np.int64)
        idx = np.array([a + int(np.argmax(r.mpi[a:b])) for a, b in zip(edges[:-1], edges[1:]) if b > a])
    return {"t": [round(float(x), 6) for x in r.t[idx]], "pss": [float(x) for x in r.pss[idx]],
            "mpi": [float(x) for x in r.mpi[idx]], "app": [float(x) for x in r.app[idx]]}


# ---------------------------------------------------------------------- reading
def _local_counts(path: Path, nranks: int) -> dict[int, int]:
    """Ranks on the host of each rank, from meta.json (all on one host when unknown)."""
    hosts = (meta_file.load(path, []) or {}).get("rank_host")
    if hosts is not None:
        per = Counter(hosts)
        return {r: per[h] for r, h in enumerate(hosts)}
    return {r: nranks for r in range(nranks)}


def _functions(path: Path, problems: list[str] | None = None) -> list[str]:
    """The MPI functions of the build, by number (memory/functions.txt); what is wrong with the
    file goes to problems (the records then name functions by number)."""
    f = layout.memory_functions_file(path)
    why = None
    try:
        raw = layout.read_regular(f, limit=1 << 20)
        names = raw.decode("utf-8").split("\n")
        if names and names[-1] == "":
            names.pop()
        bad = next((n for n in names if not n.startswith(("MPI_", "PMPI_")) or not n.isprintable()), None)
        if bad is not None or not names or not raw.endswith(b"\n"):  # the runtime ends every name with one
            why = "is damaged (not a list of MPI functions)" if names and raw.endswith(b"\n") else \
                "is cut short" if names else "is empty"
            names = []
    except FileNotFoundError:
        names, why = [], "is missing"
    except (OSError, UnicodeDecodeError, RunDirectoryError) as err:
        names, why = [], (str(err) if isinstance(err, RunDirectoryError) else f"cannot be read ({err})")
    if why is not None and problems is not None:
        problems.append(f"{f.name} {why}: functions are named by number" if not why.startswith(f.name)
                        else f"{why}: functions are named by number")
    return names


def read_rank(file: Path, names: list[str], local: int, method: str | None = None) -> RankMemory:
    """Read one rank's file into its timeline.

    Args:
        method: "fast" reads an smaps run as the fast method would have seen it (its samples carry
            the allocation counters too): both estimates of one execution. None: the run's method.

    Raises:
        RunDirectoryError: the file is not a memory file of mpilens.
    """
    raw = layout.read_regular(file)
    if len(raw) < HEADER.itemsize or raw[:8] not in (MAGIC, L.MAGIC_MEMORY_V1):
        raise RunDirectoryError(f"{file}: not an mpilens memory file (bad or missing header)")
    h = np.frombuffer(raw[:HEADER.itemsize], HEADER)[0]
    problems = []
    body = raw[HEADER.itemsize:]
    dtype = RECORD if raw[:8] == MAGIC else RECORD_V1
    if len(body) % dtype.itemsize:
        problems.append(f"{file.name}: {len(body) % dtype.itemsize} bytes of a torn last record ignored")
        body = body[:len(body) - len(body) % dtype.itemsize]
    rec = np.frombuffer(body, dtype)
    if dtype is RECORD:  # each record's check: one that fails it is damaged, left out and named
        rows = np.frombuffer(body, np.uint8).reshape(-1, RECORD.itemsize)
        whole = (layout.fnv1a_rows(rows[:, :CHECKED]) == rec["check"]) & (rec["zero"] == 0)
        if not whole.all():
            problems.append(f"{file.name}: {int((~whole).sum())} of {len(rec)} records fail their check "
                            "(damaged; left out)")
            rec = rec[whole]
    # records with values no run writes are left out and named (the only test of a version 1 file)
    fn_id = np.isin(rec["kind"], (CALL, FUNC))  # their fn is a function number + 1 (functions.txt)
    plausible = (np.isin(rec["kind"], KINDS) & (rec["pss"] >= -1) & (rec["pss"] < 1 << 50) & (rec["rss"] >= -1)
                 & (rec["rss"] < 1 << 50) & (rec["t_ns"] < np.uint64(1 << 62))
                 & (~fn_id | (rec["fn"] <= (len(names) if names else 0xFFFF))))
    if not plausible.all():
        problems.append(f"{file.name}: {int((~plausible).sum())} of {len(rec)} records hold values no run writes "
                        "(damaged; left out)")
        rec = rec[plausible]
    if method is None:
        method = METHODS[int(h["method"])] if int(h["method"]) < len(METHODS) else "fast"
    elif method not in METHODS or (method == "smaps" and int(h["method"]) != METHODS.index("smaps")):
        raise ValueError(f"method must be 'fast', or 'smaps' for a run made with it; got {method!r}")
    def name(f: int) -> str:
        return names[f] if f < len(names) and names[f] else f"fn{f}"

    # points of the timeline, and what each adds to MPI's part
    kinds = rec["kind"]
    samp = rec[np.isin(kinds, (SAMPLE, INIT_BEGIN, INIT_END, FINAL, FINI_BEGIN)) & (rec["pss"] >= 0)]
    ib = rec[kinds == INIT_BEGIN]
    ie = rec[kinds == INIT_END]
    fb = samp[samp["kind"] == FINI_BEGIN]
    fe = samp[samp["kind"] == FINAL]
    init_pss = init_rss = 0
    if len(ib) and len(ie):  # the tool's own growth (its state is set up inside MPI_Init) left out
        init_pss = int((ie[0]["pss"] - ie[0]["sample_tool"]) - (ib[0]["pss"] - ib[0]["sample_tool"]))
        init_rss = int((ie[0]["rss"] - ie[0]["sample_tool"]) - (ib[0]["rss"] - ib[0]["sample_tool"]))
    elif len(rec):
        problems.append(f"{file.name}: no MPI_Init samples; MPI's part starts at 0")
    fini = None  # absent when the process ended before MPI_Finalize (said by its end record)
    if len(fb) and len(fe):  # MPI_Finalize, like MPI_Init, by residency: the loader unmaps components
        fini = (float((fe[0]["pss"] - fe[0]["sample_tool"]) - (fb[0]["pss"] - fb[0]["sample_tool"])),
                float((fe[0]["rss"] - fe[0]["sample_tool"]) - (fb[0]["rss"] - fb[0]["sample_tool"])))
    t_ie = int(ie[0]["t_ns"]) if len(ie) else 0
    share = 1.0 / max(local, 1)

    ts = [samp["t_ns"].astype(np.float64)]
    pss = [samp["pss"].astype(np.float64)]
    rss = [samp["rss"].astype(np.float64)]
    tool = [samp["sample_tool"].astype(np.float64)]
    if method == "fast":
        base = ie[0] if len(ie) else None
        after = samp["t_ns"] >= t_ie

        def since_init(col: str) -> np.ndarray:
            return samp[col] - (float(base[col]) if base is not None else 0.0)

        growth = since_init("sample_mpi_heap") + since_init("sample_mpi_mapped") + since_init("sample_mpi_shared") * share
        level = np.where(after, init_pss + growth, 0.0)
        level_rss = np.where(after, init_rss + growth, 0.0)
        if fini is not None:
            i_fb = int(np.flatnonzero(samp["kind"] == FINI_BEGIN)[0])
            last = samp["kind"] == FINAL
            level[last] = level[i_fb] + fini[0]
            level_rss[last] = level_rss[i_fb] + fini[1]
        order_t = np.concatenate(ts)
        o = np.argsort(order_t, kind="stable")
        t = order_t[o]
        mpi, mpi_rss = level[o], level_rss[o]
        p, q, tl = pss[0][o], rss[0][o], tool[0][o]
    else:
        calls = rec[(kinds == CALL) & (rec["pss"] >= 0) & (rec["call_pss_before"] >= 0)]
        f_pss, f_rss = fini if fini is not None else (0.0, 0.0)
        inc = [np.where(samp["kind"] == INIT_END, float(init_pss), np.where(samp["kind"] == FINAL, f_pss, 0.0)),
               np.zeros(len(calls)), (calls["pss"] - calls["call_pss_before"]).astype(np.float64)]
        inc_rss = [np.where(samp["kind"] == INIT_END, float(init_rss), np.where(samp["kind"] == FINAL, f_rss, 0.0)),
                   np.zeros(len(calls)), (calls["rss"] - calls["call_rss_before"]).astype(np.float64)]
        ts += [calls["call_t_before"].astype(np.float64), calls["t_ns"].astype(np.float64)]
        pss += [calls["call_pss_before"].astype(np.float64), calls["pss"].astype(np.float64)]
        rss += [calls["call_rss_before"].astype(np.float64), calls["rss"].astype(np.float64)]
        tool += [np.full(len(calls), np.nan), np.full(len(calls), np.nan)]
        t = np.concatenate(ts)
        o = np.argsort(t, kind="stable")
        t = t[o]
        mpi = np.cumsum(np.concatenate(inc)[o])
        mpi_rss = np.cumsum(np.concatenate(inc_rss)[o])
        p, q, tl = np.concatenate(pss)[o], np.concatenate(rss)[o], np.concatenate(tool)[o]
        # the tool's memory is sampled by the timer: carry the last value to the call points
        idx = np.where(~np.isnan(tl), np.arange(len(tl)), 0)
        np.maximum.accumulate(idx, out=idx)
        tl = np.where(np.isnan(tl[idx]), 0.0, tl[idx])
    tl = np.maximum(tl, 0.0)

    funcs: dict[str, dict[str, int]] = {}
    for f in rec[kinds == FUNC]:
        funcs[name(int(f["fn"]))] = {"allocated": int(f["func_alloc"]), "freed": int(f["func_freed"]),
                                     "allocations": int(f["t_ns"]), "frees": int(f["func_nfree"]),
                                     "shared": int(f["func_shared"]), "shm": int(f["aux"]),
                                     "pss_grown": int(f["pss"]), "pss_shrunk": int(f["rss"])}
    # MPI_Init's and MPI_Finalize's parts are their residency changes, in both methods
    for rec0, delta in ((ie, init_pss), (fe, int(fini[0]) if fini is not None else None)):
        if len(rec0) and delta is not None:
            f = funcs.setdefault(name(int(rec0[0]["fn"])), {"allocated": 0, "freed": 0, "allocations": 0,
                                                             "frees": 0, "shared": 0, "shm": 0, "pss_grown": 0,
                                                             "pss_shrunk": 0})
            f["pss_grown" if delta >= 0 else "pss_shrunk"] += abs(delta)
    marks = []
    for m in rec[kinds == MARK]:
        what = {MARK_BEGIN: "begin", MARK_END: "end", MARK_PCONTROL: "pcontrol"}.get(int(m["aux"]), "?")
        label = bytes(m["mark_name"]).split(b"\0", 1)[0].decode("utf-8", "replace")
        marks.append({"t": float(m["t_ns"]) * 1e-9, "what": what, "name": label, "level": int(m["fn"])})
    marks.sort(key=lambda m: m["t"])
    ends = rec[kinds == END]
    ended = L.END_REASON_NAMES.get(int(ends[-1]["aux"]), "unknown") if len(ends) else None
    if ended is None:
        problems.append(f"{file.name}: no end record (the process was killed); samples up to "
                        f"{float(t[-1]) * 1e-9 if len(t) else 0:.3f} s are used")
    elif ended != "MPI_Finalize":
        problems.append(f"{file.name}: the process ended by {ended}")
    if len(ends) and int(ends[-1]["pss"]) > 0:
        problems.append(f"{file.name}: {int(ends[-1]['pss'])} mappings were not tracked (table full)")
    return RankMemory(rank=int(h["rank"]), method=method, period_ms=int(h["period_ms"]), rollup=bool(h["rollup"]),
                      t=t * 1e-9, pss=p - tl, rss=q - tl, mpi=mpi, mpi_rss=mpi_rss, tool=tl, init_pss=init_pss,
                      functions=funcs, marks=marks, ended=ended, problems=problems)


def load(path: str | Path, method: str | None = None) -> MemoryRun:
    """Read the memory files of a run directory.

    Args:
        method: None for the run's own method; "fast" to read an smaps run with the fast method's
            estimate (see read_rank).

    Raises:
        RunDirectoryError: the run has no memory data (not run with --mode memory) or none is readable.
    """
    path = Path(path)
    folder = layout.memory_dir(path)
    files = layout.memory_files(path)
    if not folder.is_dir() or not files:
        raise RunDirectoryError(f"{path}: no memory data ({layout.describe('memory')}); "
                                "run with `mpilens run --mode memory`")
    nranks = (meta_file.load(path, []) or {}).get("nranks", len(files))
    local = _local_counts(path, nranks)
    ranks, problems = [], []
    names = _functions(path, problems)
    for f in files:
        try:
            r = read_rank(f, names, local.get(layout.rank_of("memory", f), nranks), method)
        except (RunDirectoryError, OSError, ValueError) as err:
            problems.append(str(err))
            continue
        ranks.append(r)
        problems += r.problems
    if not ranks:
        raise RunDirectoryError(f"{folder}: no readable memory file ({'; '.join(problems)})")
    ranks.sort(key=lambda r: r.rank)
    missing = sorted(set(range(nranks)) - {r.rank for r in ranks})
    if missing:
        problems.append(f"no memory file of rank(s) {', '.join(map(str, missing))}")
    methods = {r.method for r in ranks}
    return MemoryRun(path=path, nranks=nranks, method=methods.pop() if len(methods) == 1 else "mixed", ranks=ranks,
                     local=local, problems=problems)


def footprint(run: MemoryRun, base: MemoryRun) -> dict[str, Any]:
    """What a program costs in memory beyond a baseline program (the QUO thesis' Table 5.3 method:
    the QUO program minus the trivial program): per series, mean peak per process of each run and
    the difference, with its standard error over ranks so that run-to-run noise is visible."""
    notes = []
    if run.nranks != base.nranks:
        notes.append(f"the runs have {run.nranks} and {base.nranks} ranks: the difference mixes in the scale")
    if run.method != base.method:
        notes.append(f"the runs used methods {run.method} and {base.method}")
    b = {row["series"]: row for row in base.peaks()}
    rows = []
    for row in run.peaks():
        other = b[row["series"]]
        if row["series"] == "tool":
            continue
        diff = se = None
        if row["mean"] is not None and other["mean"] is not None:  # unmeasured stays unmeasured
            diff = row["mean"] - other["mean"]
            se = math.sqrt((row["std"] ** 2 / row["ranks"] if row["ranks"] > 1 else 0.0)
                           + (other["std"] ** 2 / other["ranks"] if other["ranks"] > 1 else 0.0))
        rows.append({"metric": row["metric"], "series": row["series"], "run": row["mean"], "baseline": other["mean"],
                     "difference": diff, "std_error": se})
    return {"run": str(run.path), "baseline": str(base.path), "notes": notes, "rows": rows}
