"""Ranks recovered from their statistics files: a rank killed before MPI_Finalize (SIGKILL, the
OOM killer, a time limit, a launcher ending the job) writes nothing at its end, but every thread's
statistics were a shared mapping of ranks/rank-NNNNNN.stats, which the kernel keeps (the runtime's
stats.c). This module reads such a file with the names file beside it and makes the rank's payload
from it, as the rank itself would have at its end (runtime/src/core/payload.c: the same sums over
threads, the same estimates under MPILENS_TIME_SAMPLE), so the merge (merge.py) takes it like
any rank's partial file. Layouts: runtime/spec/rundir.yaml (stats, stats_names, payload).
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _layout as L
from . import layout
from .errors import RunDirectoryError

if TYPE_CHECKING:
    import numpy as np

PAGE = 4096
SLOW = 0x80000000  # a call site's fn bit that is the runtime's own
NO_MODULE = 0xFFFFFFFF


class Damaged(Exception):
    """What is wrong with a statistics file."""


class Lost(Exception):
    """A whole statistics file whose rank's statistics never were in it (the file system could not
    hold them): the rank has no data, which is not the same as data of zeros."""


class _Starting(Exception):
    """A thread section not yet whole: the thread was starting when the rank ended (no statistics)."""


@dataclass
class Virtual:
    """A rank's file made in memory from its statistics file, read like a rank's file in a container."""

    name: str  # the statistics file, relative to the run directory
    rank: int
    data: bytes

    def read_bytes(self) -> bytes:
        """The file's bytes."""
        return self.data

    def __str__(self) -> str:
        return self.name


@dataclass
class Recovered(Virtual):
    """One rank's payload; payload.merge takes it as the rank's partial file."""

    last_s: float | None = None  # how far its statistics go (its last timed call), since MPI_Init's end
    inside_call: bool = False  # it ended inside an MPI call (not counted)
    counting: bool = False  # it ended while counting a call that had returned (maybe counted in part)
    given_up_s: float | None = None  # when the file system could not hold its statistics any more
    finalizing: bool = False  # it ended in MPI_Finalize, after measuring stopped (the merge of the profile)
    threads_unkept: int = 0  # its threads whose statistics the file system could not hold (not in the file)


def _stats_files(run_dir: str | Path, have: set[int], problems: list[str], what: str, read: Any) -> list[Any]:
    """read(fd, names file, rank) of each statistics file of a rank not in `have`, the files that
    cannot be used named in problems (`what` of the rank is then left out); None results dropped."""
    out = []
    for f in layout.files(run_dir, "stats"):
        rank = layout.rank_of("stats", f)
        if rank is None or rank in have or not isinstance(f, Path):
            continue
        rel = f.relative_to(run_dir).as_posix() if f.is_relative_to(run_dir) else str(f)
        try:
            fd = layout.open_regular(f)
            try:
                one = read(fd, layout.path(run_dir, "stats_names", rank=rank), rank)
            finally:
                os.close(fd)
        except Damaged as err:
            problems.append(f"{rel} is damaged: {err}; {what} of rank {rank} {'is' if what == 'the data' else 'are'} left out")
            continue
        except Lost as err:
            problems.append(f"rank {rank}: {rel} holds no statistics: {err}")
            continue
        except (RunDirectoryError, OSError) as err:
            why = str(err) if isinstance(err, RunDirectoryError) else f"{rel}: cannot read ({err.strerror})"
            problems.append(f"{why}; {what} of rank {rank} {'is' if what == 'the data' else 'are'} left out")
            continue
        if one is not None:
            one.name = rel
            out.append(one)
    return out


def stats_state(path: Any) -> int | None:
    """The state of a statistics file's head (1 measuring, 2 written elsewhere, 3 in MPI_Finalize),
    None when it cannot be read."""
    try:
        fd = layout.open_regular(path)
    except (RunDirectoryError, OSError):
        return None
    try:
        raw = _pread(fd, 0, L.STATS_HEAD.size, "head")
    except Damaged:
        return None
    finally:
        os.close(fd)
    head = dict(zip(L.STATS_HEAD_FIELDS, L.STATS_HEAD.unpack(raw)))
    return head["state"] if head["magic"] in (L.MAGIC_STATS, L.MAGIC_STATS_V1) else None


def recover(run_dir: str | Path, have: set[int], problems: list[str]) -> list[Recovered]:
    """The ranks of run_dir that left a statistics file and are not in `have` (the ranks that left
    a partial file, which a rank writes after its statistics), each as a payload; a file that cannot
    be used is named in problems."""
    return _stats_files(run_dir, have, problems, "the data", _recover)


# ------------------------------------------------------------------ reading
def _record(s: struct.Struct, fields: tuple[str, ...], buf: Any, offset: int = 0) -> dict[str, Any]:
    return dict(zip(fields, s.unpack_from(buf, offset)))


def _names(path: Path) -> dict[int, dict[int, Any]]:
    """The names file: {kind: {id: (aux, aux64, name)}}, for io_file {id: {aux: name}}; a record
    cut short at the end (the rank killed while writing it) is left out."""
    raw = layout.read_regular(path, limit=64 << 20)
    if raw[:8] != L.MAGIC_STATS_NAMES:
        raise Damaged(f"{path.name} does not start with {L.MAGIC_STATS_NAMES!r}")
    out: dict[int, dict[int, Any]] = {k: {} for k in L.STATS_NAME_KIND_NAMES}
    off, size = 8, L.STATS_NAME.size
    while off + size + 2 <= len(raw):
        r = _record(L.STATS_NAME, L.STATS_NAME_FIELDS, raw, off)
        (n,) = struct.unpack_from("<H", raw, off + size)
        if off + size + 2 + n > len(raw):
            break
        if r["kind"] not in out:
            raise Damaged(f"{path.name}: a record of kind {r['kind']} at byte {off}")
        name = raw[off + size + 2:off + size + 2 + n]
        if r["kind"] == L.STATS_NAME_KIND_IO_FILE:  # several names per file: {aux: name}
            out[r["kind"]].setdefault(r["id"], {})[r["aux"]] = name  # type: ignore[index]
        else:
            out[r["kind"]][r["id"]] = (r["aux"], r["aux64"], name)
        off += size + 2 + n
    return out


def _pread(fd: int, offset: int, n: int, what: str) -> bytes:
    """n bytes at offset, read (not mapped: a hole read through a mapping of a full tmpfs ends in
    SIGBUS, a read(2) of it gives zeros)."""
    b = os.pread(fd, n, offset)
    if len(b) != n:
        raise Damaged(f"{what}: cut short at byte {offset + len(b)}")
    return b


class _Section:
    """One thread's statistics (numpy arrays of the parts the reader needs)."""

    def __init__(self, fd: int, n: int, head: dict[str, Any], npaths: int) -> None:
        import numpy as np

        sb, nfunc, paths = head["section_bytes"], head["nfunc"], head["max_paths"]
        base = head["sections_at"] + n * sb
        s = dict(zip(L.STATS_SECTION_FIELDS, L.STATS_SECTION.unpack(_pread(fd, base, L.STATS_SECTION.size,
                                                                             f"thread section {n}"))))
        if s["magic"] == L.MAGIC_STATS_SECTION_V1:
            raise Damaged(f"thread section {n} was written by an earlier mpilens (magic {L.MAGIC_STATS_SECTION_V1!r}): "
                          "report it with that version")
        if s["magic"] != L.MAGIC_STATS_SECTION:
            raise _Starting
        self.state, self.tick_given_up = s["state"], s["tick_given_up"]

        def scalar(at: str, fmt: str) -> int:
            if not 0 < s[at] <= sb - 8:
                raise Damaged(f"thread section {n}: {at} {s[at]} is outside the section")
            return int(struct.unpack(fmt, _pread(fd, base + s[at], struct.calcsize(fmt), f"thread section {n}"))[0])

        def array(at: str, dtype: Any, count: int, room: int | None = None) -> np.ndarray:
            off, size = s[at], (room if room is not None else count) * dtype.itemsize
            if off <= 0 or off + size > sb:
                raise Damaged(f"thread section {n}: {at} ({off}, {size} bytes) is outside the section")
            return np.frombuffer(_pread(fd, base + off, count * dtype.itemsize, f"thread section {n}"), dtype=dtype)

        self.depth = scalar("at_depth", "<i")
        self.last = scalar("at_last", "<Q")
        self.reset_gen = scalar("at_reset_gen", "<I")
        self.dropped_requests = scalar("at_dropped_requests", "<Q")
        self.region_mismatch = scalar("at_region_mismatch", "<Q")
        self.recv_unknown = scalar("at_recv_unknown", "<Q")
        self.requests_open = scalar("at_requests_open", "<q") + scalar("at_rq_live", "<I") + scalar("at_rr_live", "<I")
        # the rows of the region paths the process named only (those of the others are holes)
        self.blocks = array("blocks", L.STATS_FSTAT_DTYPE, npaths * nfunc, paths * nfunc).reshape(npaths, nfunc)
        self.hist = array("hist", L.STATS_HBIN_DTYPE, nfunc * head["nbins"]).reshape(nfunc, head["nbins"])
        self.matrix = array("matrix", L.STATS_PEER_DTYPE, head["nranks"])
        self.rstats = array("rstats", L.STATS_REGION_DTYPE, npaths, paths)
        mc = head["max_counters"]
        self.ucounts = array("ucounts", L.STATS_UCOUNT_DTYPE, npaths * mc, paths * mc).reshape(npaths, mc)
        self.sites = self.site_other = self.frames = None
        if head["callsite_depth"] and s["sites"]:
            cap, depth = head["site_cap"], head["callsite_depth"]
            self.sites = array("sites", L.STATS_SITE_DTYPE, cap)
            self.site_other = array("site_other", L.STATS_SITE_DTYPE, nfunc)
            self.frames = array("site_frames", L.STATS_FRAME_DTYPE, cap * depth).reshape(cap, depth)


def _head(fd: int, rank: int) -> dict[str, Any]:
    """A statistics file's head, checked against the file's size and its rank."""
    size = os.fstat(fd).st_size
    if size < PAGE:
        raise Damaged(f"{size} bytes, less than its head")
    head = dict(zip(L.STATS_HEAD_FIELDS, L.STATS_HEAD.unpack(_pread(fd, 0, L.STATS_HEAD.size, "head"))))
    if head["magic"] not in (L.MAGIC_STATS, L.MAGIC_STATS_V1):  # version 1: zeros where threads_unkept is
        raise Damaged(f"it does not start with {L.MAGIC_STATS!r} (the rank was killed in MPI_Init)")
    checks = [(head["rank"] == rank, f"it names rank {head['rank']}"),
              (0 < head["nfunc"] < 65536, f"{head['nfunc']} functions"),
              (head["nbins"] == L.SIZE_BINS - 1, f"{head['nbins']} size bins"),
              (2 <= head["max_paths"] <= 65537, f"{head['max_paths']} region paths"),
              (0 < head["max_counters"] <= 4096, f"{head['max_counters']} counters"),
              (head["callsite_depth"] <= 64 and head["site_cap"] <= 1 << 24, "call-site tables too large"),
              (head["section_bytes"] % PAGE == 0 and head["section_bytes"] > 0, "sections of no whole pages"),
              (head["nthreads"] < 1 << 16, f"{head['nthreads']} thread sections"),
              (head["sections_at"] % PAGE == 0 and PAGE <= head["sections_at"], "sections at no page"),
              (head["sections_at"] + head["nthreads"] * head["section_bytes"] <= size,
               f"{head['nthreads']} thread sections in {size} bytes"),
              (rank < head["nranks"] < 1 << 24, f"{head['nranks']} ranks"),
              (_rate(head) is not None, "its clock points span no time: its ticks cannot be converted")]
    for ok, what in checks:
        if not ok:
            raise Damaged(what)
    head["size"] = size
    return head


def _recover(fd: int, names_path: Path, rank: int) -> Recovered:
    head = _head(fd, rank)
    names = _names(names_path)
    regions = names[L.STATS_NAME_KIND_REGION]
    npaths = min(head["max_paths"], max([1, *regions]) + 1)
    sections = []
    for n in range(head["nthreads"]):
        try:
            sections.append(_Section(fd, n, head, npaths))
        except _Starting:  # the last one, begun and not finished: it counted nothing yet
            continue
    if not sections and head["threads_unkept"]:
        n = head["threads_unkept"]
        when = ("it ended in MPI_Finalize before its statistics were written" if head["state"] == 3
                else "it ended before writing them")
        raise Lost(f"{'its thread' if n == 1 else f'its {n} threads'} counted in memory only (the file system "
                   f"could not hold {'its' if n == 1 else 'their'} statistics) and {when}: nothing of the rank "
                   "survives")
    current = [s for s in sections if s.reset_gen == head["reset_gen"]]  # not reset by MPI_Pcontrol(2) since
    rate = _rate(head)
    assert rate is not None  # _head checked it
    data, last = _payload(head, names, current, npaths, rate)
    given_up = [s.tick_given_up for s in sections if s.state == 2]
    return Recovered("", rank, data, last, inside_call=any(s.depth == 1 for s in current),
                     counting=any(s.depth == 2 for s in current),
                     given_up_s=max(min(given_up) - head["tick_end"], 0) / rate / 1e9 if given_up else None,
                     finalizing=head["state"] == 3, threads_unkept=head["threads_unkept"])


def _rate(head: dict[str, Any]) -> float | None:
    """Ticks per ns, from the clock points at MPI_Init's entry and end."""
    if not head["clock_is_tsc"]:
        return 1.0
    dt, dn = head["tick_end"] - head["tick_begin"], head["ns_end"] - head["ns_begin"]
    return dt / dn if dt > 0 and dn > 0 else None


# ------------------------------------------------------------------ the payload (payload.c's sums)
W = L.SAMPLE_WARMUP


def _estimated(x: np.ndarray, ts: int) -> np.ndarray:
    """payload.c's estimated_ticks, elementwise (float64)."""
    import numpy as np

    ticks = x["ticks"].astype(np.float64)
    if ts <= 1:
        return ticks
    calls, sampled, sticks = x["calls"].astype(np.float64), x["sampled"].astype(np.float64), x["sampled_ticks"].astype(np.float64)
    later, warm = calls - W, ticks - sticks
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(sampled == 0, warm + np.floor(warm / W * later), warm + np.floor(sticks / sampled * later))
    return np.where((calls <= W) | (sampled == later), ticks, est)


def _variance(x: np.ndarray, ts: int) -> np.ndarray:
    """payload.c's estimate_variance, elementwise."""
    import numpy as np

    if ts <= 1:
        return np.zeros(x.shape)
    calls, n = x["calls"].astype(np.float64), x["sampled"].astype(np.float64)
    ticks, sticks, sq = x["ticks"].astype(np.float64), x["sampled_ticks"].astype(np.float64), x["sampled_sq"]
    later = calls - W
    with np.errstate(divide="ignore", invalid="ignore"):
        mean0 = np.where(n > 0, sticks, (ticks - sticks) / W)
        few = later * mean0 * later * mean0
        mean = sticks / n
        s2 = np.maximum((sq - n * mean * mean) / (n - 1), 0)
        many = later * later * (1 - n / later) * s2 / n
    out = np.where(n < 2, few, many)
    return np.where((calls <= W) | (n >= later), 0.0, out)


def _timed(x: np.ndarray, ts: int) -> np.ndarray:
    import numpy as np

    if ts <= 1:
        return x["calls"].astype(np.int64)
    return np.minimum(x["calls"], W).astype(np.int64) + x["sampled"].astype(np.int64)


def _pack(s: struct.Struct, fields: tuple[str, ...], **values: Any) -> bytes:
    return s.pack(*(values[f] for f in fields))


def _string(b: bytes) -> bytes:
    b = b[:65535]
    return struct.pack("<H", len(b)) + b


def _payload(head: dict[str, Any], names: dict[int, dict[int, Any]], threads: list[_Section],
             npaths: int, rate: float) -> tuple[bytes, float | None]:
    import numpy as np

    ts, nfunc = max(head["time_sample"], 1), head["nfunc"]

    def ns(ticks: float) -> int:
        return int(max(ticks, 0) / rate)

    funcs = names[L.STATS_NAME_KIND_FUNCTION]
    regions = names[L.STATS_NAME_KIND_REGION]
    counters = names[L.STATS_NAME_KIND_COUNTER]
    modules = names[L.STATS_NAME_KIND_MODULE]
    blocks = [t.blocks for t in threads]
    zero_f = np.zeros((npaths, nfunc), dtype=L.STATS_FSTAT_DTYPE)
    stack = np.stack(blocks) if blocks else zero_f[None]
    called = stack["calls"] > 0
    est = np.where(called, _estimated(stack, ts), 0.0)
    var = np.where(called, _variance(stack, ts), 0.0)
    used = (stack["calls"] > 0) | (stack["sent"] != 0) | (stack["recv"] != 0)
    used_pf = used.any(axis=0)
    last = max((t.last for t in threads), default=0)
    wall = ns(last - head["tick_end"]) if last > head["tick_end"] else 0
    out = [b""]  # the head, made last (its total length)
    out.append(_string(head["host"].rstrip(b"\0")))

    # regions: paths 1.. (the overflow path only when used), merged over threads
    rs = np.stack([t.rstats for t in threads]) if threads else np.zeros((1, npaths), dtype=L.STATS_REGION_DTYPE)
    uc = np.stack([t.ucounts for t in threads]) if threads else None
    counter_used = (uc["updates"] > 0).any(axis=0) if uc is not None else np.zeros((npaths, 1), bool)

    def path_used(p: int) -> bool:
        return bool(used_pf[p].any() or (rs["visits"][:, p] > 0).any() or counter_used[p].any())

    recs = []
    for p in range(1, npaths):
        if p == 1 and not path_used(p):
            continue
        parent, _, name = regions.get(p, (0, 0, f"(region path {p}: name lost)".encode()))
        recs.append(_pack(L.PAYLOAD_REGION, L.PAYLOAD_REGION_FIELDS, path=p, parent=parent,
                          visits=int(rs["visits"][:, p].sum()), ns=ns(float(rs["ticks"][:, p].sum()))) + _string(name))
    out += [struct.pack("<I", len(recs)), *recs]

    # functions called at least once
    fused = np.nonzero(used_pf.any(axis=0))[0]
    recs = []
    for f in fused:
        if int(f) not in funcs:
            raise Damaged(f"function {f} has no name in the names file")
        cls, _, name = funcs[int(f)]
        recs.append(_pack(L.PAYLOAD_FUNCTION, L.PAYLOAD_FUNCTION_FIELDS, fn=int(f), **{"class": cls}) + _string(name))
    out += [struct.pack("<I", len(recs)), *recs]

    # per region path and function
    recs = []
    for p, f in zip(*np.nonzero(used_pf)):
        x = stack[:, p, f]
        c = called[:, p, f]
        min_inv = int(x["min_inv"][c].max()) if c.any() else 0
        recs.append(_pack(L.PAYLOAD_STAT, L.PAYLOAD_STAT_FIELDS, path=int(p), fn=int(f), calls=int(x["calls"].sum()),
                          ns=ns(float(est[:, p, f].sum())),
                          min_ns=ns(float(~min_inv & (1 << 64) - 1) if min_inv else 0),
                          max_ns=ns(float(x["max"][c].max()) if c.any() else 0),
                          timed=int(_timed(x, ts)[c].sum()), se_ns=ns(float(np.sqrt(var[:, p, f].sum()))),
                          sent=int(x["sent"].sum()), recv=int(x["recv"].sum())))
    out += [struct.pack("<I", len(recs)), *recs]

    # message sizes; under sampling each thread's bin time scaled by its function's estimate ratio
    recs = []
    hist = np.stack([t.hist for t in threads]) if threads else np.zeros((1, nfunc, head["nbins"]), L.STATS_HBIN_DTYPE)
    hticks = hist["ticks"].astype(np.float64)
    if ts > 1:
        raw = stack["ticks"].astype(np.float64).sum(axis=1)  # [thread, fn]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(raw > 0, est.sum(axis=1) / raw, 1.0)
        hticks = np.where(hist["calls"] > 0, np.floor(hticks * ratio[:, :, None]), hticks)
    hc = hist["calls"].sum(axis=0)
    for f, b in zip(*np.nonzero(hc)):
        recs.append(_pack(L.PAYLOAD_SIZE, L.PAYLOAD_SIZE_FIELDS, fn=int(f), bin=int(b), calls=int(hc[f, b]),
                          ns=ns(float(hticks[:, f, b].sum()))))
    out += [struct.pack("<I", len(recs)), *recs]

    # point-to-point sends by destination
    recs = []
    if threads:
        mat = np.stack([t.matrix for t in threads])
        msgs, byts = mat["messages"].sum(axis=0), mat["bytes"].sum(axis=0)
        for r in np.nonzero(msgs)[0]:
            recs.append(_pack(L.PAYLOAD_PEER, L.PAYLOAD_PEER_FIELDS, dst=int(r), messages=int(msgs[r]), bytes=int(byts[r])))
    out += [struct.pack("<I", len(recs)), *recs]

    # user counters: sums add up over threads; "last" counters keep the latest value
    ncounters = max(counters, default=-1) + 1
    recs = [_pack(L.PAYLOAD_COUNTER_NAME, L.PAYLOAD_COUNTER_NAME_FIELDS, id=i, kind=counters.get(i, (0, 0, b""))[0])
            + _string(counters.get(i, (0, 0, f"(counter {i}: name lost)".encode()))[2]) for i in range(ncounters)]
    out += [struct.pack("<I", len(recs)), *recs]
    recs = []
    if uc is not None and ncounters:
        for p in range(npaths):
            for i in range(min(ncounters, uc.shape[2])):
                u = uc[:, p, i]
                live = u["updates"] > 0
                if not live.any():
                    continue
                if counters.get(i, (0,))[0] == 0:
                    value = float(u["value"][live].sum())
                else:
                    value = float(u["value"][live][np.argmax(u["when"][live])])
                when = int(u["when"][live].max())
                recs.append(_pack(L.PAYLOAD_COUNTER, L.PAYLOAD_COUNTER_FIELDS, path=p, id=i, value=value,
                                  updates=int(u["updates"].sum()), when_ns=ns(when - head["tick_begin"])))
    out += [struct.pack("<I", len(recs)), *recs]

    # call sites
    depth = head["callsite_depth"]
    out.append(_pack(L.PAYLOAD_CALLSITES, L.PAYLOAD_CALLSITES_FIELDS, depth=depth))
    nmod = max(modules, default=-1) + 1 if depth else 0
    recs = [_pack(L.PAYLOAD_MODULE, L.PAYLOAD_MODULE_FIELDS, id=m, bias=modules.get(m, (0, 0, b""))[1])
            + _string(modules.get(m, (0, 0, b""))[2]) for m in range(nmod)]
    out += [struct.pack("<I", len(recs)), *recs]
    sites, frames, sid = [], [], 0

    def site_ns(e: Any) -> int:
        ticks = float(e["ticks"])
        if 0 < e["timed"] < e["calls"]:
            ticks = ticks * float(e["calls"]) / float(e["timed"])
        return ns(ticks)

    for t in threads if depth else []:
        if t.sites is None:
            continue
        s = t.sites
        live = np.nonzero((s["id"] != 0) & ((s["calls"] > 0) | (s["sent"] != 0) | (s["recv"] != 0)))[0]
        for i in live:
            e, fr = s[i], t.frames[i]
            k = 0
            while k < depth and fr["addr"][k]:
                m = int(fr["module"][k])
                bias = modules[m][1] if m < nmod and m in modules else 0
                vaddr = (int(fr["addr"][k]) - bias) % (1 << 64) if m < nmod else int(fr["addr"][k])
                frames.append(_pack(L.PAYLOAD_FRAME, L.PAYLOAD_FRAME_FIELDS, site=sid, level=k,
                                    module=m if m < nmod else NO_MODULE, vaddr=vaddr))
                k += 1
            sites.append(_pack(L.PAYLOAD_SITE, L.PAYLOAD_SITE_FIELDS, site=sid, fn=int(e["fn"]) & ~SLOW, frames=k,
                               calls=int(e["calls"]), ns=site_ns(e), sent=int(e["sent"]), recv=int(e["recv"])))
            sid += 1
        o = t.site_other
        for f in np.nonzero((o["calls"] > 0) | (o["sent"] != 0) | (o["recv"] != 0))[0]:
            e = o[f]
            sites.append(_pack(L.PAYLOAD_SITE, L.PAYLOAD_SITE_FIELDS, site=sid, fn=int(f), frames=0,
                               calls=int(e["calls"]), ns=site_ns(e), sent=int(e["sent"]), recv=int(e["recv"])))
            sid += 1
    out += [struct.pack("<I", len(sites)), *sites, struct.pack("<I", len(frames)), *frames]
    kept = head["intervals_state"] in (1, 2)  # the compute intervals' counts, as payload.c's tail has them
    out.append(_pack(L.PAYLOAD_TAIL, L.PAYLOAD_TAIL_FIELDS,
                     intervals_recorded=min(head["intervals_count"], head["intervals_max"]) if kept else 0,
                     intervals_dropped=head["intervals_dropped"] if kept else 0, end=L.MAGIC_PAYLOAD_END))

    body = b"".join(out)
    total = L.PAYLOAD_HEAD.size + len(body)
    out[0] = _pack(L.PAYLOAD_HEAD, L.PAYLOAD_HEAD_FIELDS, magic=L.MAGIC_PAYLOAD, total_length=total,
                   rank=head["rank"], nranks=head["nranks"], complete=0, reason=L.END_REASON_KILLED, signo=0,
                   nthreads=head["nthreads"], wall_ns=wall, mpi_ns=ns(float(est.sum())),
                   mpi_se_ns=ns(float(np.sqrt(var.sum()))),
                   init_ns=ns(head["tick_end"] - head["tick_begin"]),
                   dropped_requests=sum(t.dropped_requests for t in threads),
                   dropped_regions=head["dropped_regions"],
                   region_mismatch=sum(t.region_mismatch for t in threads),
                   requests_outstanding=max(sum(t.requests_open for t in threads), 0),
                   recv_unknown=sum(t.recv_unknown for t in threads))
    return b"".join(out), (wall / 1e9 if last > head["tick_end"] else None)


# ------------------------------------------------------------------ MPI-IO records
def recover_io(run_dir: str | Path, have: set[int], problems: list[str]) -> list[Virtual]:
    """The MPI-IO records of the ranks of run_dir that left a statistics file holding some and no
    io file of their own (`have`), each as the io file the rank would have written."""
    return _stats_files(run_dir, have, problems, "the MPI-IO records", _io_file)


def _io_file(fd: int, names_path: Path, rank: int) -> Virtual | None:
    """The io file (layout `io` of runtime/spec/rundir.yaml) of the records in a statistics file."""
    import numpy as np

    head = _head(fd, rank)
    size = head["size"]
    if head["io_state"] == 0:
        return None
    names = _names(names_path)
    io = names[L.STATS_NAME_KIND_IO_FILE]
    nfiles = len(io)
    if nfiles == 0 and not head["io_dropped_files"]:
        return None
    stride, rate = head["io_rec_bytes"], _rate(head)
    assert rate is not None  # _head checked it
    if not (L.IO_FILE.size <= stride < 1 << 16) or nfiles > head["io_max_files"] or \
            head["io_files_at"] + nfiles * stride > size:
        raise Damaged(f"{nfiles} MPI-IO records of {stride} bytes do not fit")
    listed = min(head["io_accesses"], head["io_max_accesses"])
    if head["io_accesses_at"] + listed * L.IO_ACCESS.size > size:
        raise Damaged(f"{listed} MPI-IO accesses do not fit")

    def ns(ticks: int) -> int:
        return int(ticks / rate)

    def when(ticks: int) -> int:
        return -1 if ticks == 0 else ns(ticks - head["tick_end"]) if ticks > head["tick_end"] else 0

    out = [_pack(L.IO_HEADER, L.IO_HEADER_FIELDS, magic=L.MAGIC_IO, rank=rank, nranks=head["nranks"], nfiles=nfiles,
                 dropped_files=min(head["io_dropped_files"], 0xFFFFFFFF), accesses=listed,
                 dropped_accesses=head["io_accesses"] - listed, complete=0, reason=L.END_REASON_KILLED)]
    for i in range(nfiles):
        raw = _pread(fd, head["io_files_at"] + i * stride, L.IO_FILE.size, f"MPI-IO record {i}")
        rec = np.frombuffer(raw, dtype=L.IO_FILE_DTYPE, count=1).copy()
        for k in ("read_ns", "write_ns", "open_ns", "close_ns", "sync_ns", "view_ns", "resize_ns", "max_read_ns",
                  "max_write_ns"):
            rec[k] = ns(int(rec[k][0]))
        for k in ("first_open_ns", "first_access_ns", "last_access_ns", "last_close_ns"):
            rec[k] = when(int(rec[k][0]))
        if int(rec["id"][0]) != i:
            raise Damaged(f"MPI-IO record {i} holds the id {int(rec['id'][0])}")
        out.append(rec.tobytes())
        for aux in range(4):
            out.append(_string(io.get(i, {}).get(aux, b"")))
    acc = np.frombuffer(_pread(fd, head["io_accesses_at"], listed * L.IO_ACCESS.size, "MPI-IO accesses"),
                        dtype=L.IO_ACCESS_DTYPE).copy()
    t0 = acc["t0_ns"].astype(np.float64)
    acc["t0_ns"] = np.where(t0 > head["tick_end"], np.floor((t0 - head["tick_end"]) / rate), 0).astype(np.uint64)
    acc["dur_ns"] = np.floor(acc["dur_ns"].astype(np.float64) / rate).astype(np.uint64)
    out.append(acc.tobytes())
    funcs = names[L.STATS_NAME_KIND_FUNCTION]
    used = sorted({int(x) for x in acc["fn"]} & set(funcs))
    text = json.dumps({"functions": {str(fn): funcs[fn][2].decode("utf-8", "surrogateescape") for fn in used}})
    out.append(text.encode("utf-8", "surrogateescape") + b"\n")
    return Virtual("", rank, b"".join(out))


# ------------------------------------------------------------------ compute intervals
@dataclass
class RecoveredIntervals(Virtual):
    """One rank's intervals file made from its statistics file."""

    given_up_s: float | None = None  # when the file system could not hold more of them (since MPI_Init's end)


def recover_intervals(run_dir: str | Path, have: set[int], problems: list[str]) -> list[RecoveredIntervals]:
    """The compute intervals (MPILENS_INTERVALS) of the ranks of run_dir that left a statistics
    file holding some and no intervals file of their own (`have`), each as the intervals file the
    rank would have written."""
    return _stats_files(run_dir, have, problems, "the compute intervals", _intervals_file)


def _intervals_file(fd: int, names_path: Path, rank: int) -> RecoveredIntervals | None:
    """The intervals file (layout `intervals` of runtime/spec/rundir.yaml) of the pairs of ticks in a
    statistics file: those written whole (intervals_count), up to where the file system could hold
    them (a state of 2 is said by the reader, intervals.py)."""
    import numpy as np

    head = _head(fd, rank)
    if head["intervals_state"] not in (1, 2):
        return None
    n = min(head["intervals_count"], head["intervals_max"])
    if head["intervals_at"] % PAGE or head["intervals_at"] + 16 * n > head["size"] or \
            head["intervals_at"] + 16 * head["intervals_max"] > head["sections_at"]:
        raise Damaged(f"{n} compute intervals do not fit")
    rate = _rate(head)
    assert rate is not None  # _head checked it
    ticks = np.frombuffer(_pread(fd, head["intervals_at"], 16 * n, "compute intervals"), dtype="<u8").reshape(n, 2)
    pairs = np.empty((n, 2), dtype="<f8")
    pairs[:] = ticks / rate * 1e-9
    out = [_pack(L.INTERVALS_HEADER, L.INTERVALS_HEADER_FIELDS, magic=L.MAGIC_INTERVALS, rank=rank,
                 nranks=head["nranks"], count=n, dropped=head["intervals_dropped"]), pairs.tobytes()]
    given_up = head["intervals_tick_given_up"] if head["intervals_state"] == 2 else None
    return RecoveredIntervals("", rank, b"".join(out), None if given_up is None else
                              max(given_up - head["tick_end"], 0) / rate / 1e9)



# ------------------------------------------------------------------ papi mode's counts
def recover_papi(run_dir: str | Path, have: set[int], problems: list[str]) -> list[Virtual]:
    """The PAPI counts (papi mode) of the ranks of run_dir that left a statistics file holding some
    and no papi file of their own (`have`), each as the rank's papi file (JSON) without the run's
    settings (`read`, `min_us`, `multiplex`: papi.py takes them from meta.json)."""
    return _stats_files(run_dir, have, problems, "the PAPI counts", _papi_file)


def _region_path(regions: dict[int, Any], path: int) -> str:
    """A region path as papi.c's files name it: "outer/inner", "" for the root."""
    parts: list[str] = []
    while path != 0 and len(parts) < 64:
        parent, _, name = regions.get(path, (0, 0, f"(region path {path}: name lost)".encode()))
        parts.append(name.decode("utf-8", "surrogateescape"))
        path = parent
    return "/".join(reversed(parts))


def _papi_part(area: bytes, h: dict[str, Any], key: str, dtype: str, count: int, thread: int) -> Any:
    """An array of a thread's PAPI counts (a numpy array of count 8-byte values at h[key])."""
    import numpy as np

    off = h[key]
    if off < L.STATS_PAPI.size or off + 8 * count > len(area):
        raise Damaged(f"thread section {thread}: PAPI's {key} lies outside its area")
    return np.frombuffer(area, dtype=dtype, count=count, offset=off)


def _papi_file(fd: int, names_path: Path, rank: int) -> Virtual | None:
    """The papi file (python/mpilens/papi.py's format) of the counts in a statistics file's thread
    sections (their mode areas, each a stats_papi and its arrays), summed over the threads."""
    import numpy as np

    head = _head(fd, rank)
    names = _names(names_path)
    named = names[L.STATS_NAME_KIND_PAPI_EVENT]
    events = [named[i][2].decode("utf-8", "surrogateescape") for i in sorted(named)]
    if not events or sorted(named) != list(range(len(events))):
        return None  # papi mode counted nothing on this rank (or was not on)
    n, paths, rate = len(events), head["max_paths"], _rate(head)
    assert rate is not None  # _head checked it
    nfunc = head["nfunc"]
    compute, mpi_path = np.zeros((paths, n), np.int64), np.zeros((paths, n), np.int64)
    mpi_fn, fn_ticks = np.zeros((nfunc, n), np.int64), np.zeros(nfunc, np.uint64)
    compute_ticks, phases = np.zeros(paths, np.uint64), np.zeros(paths, np.uint64)
    reads = read_ticks = unread = threads = 0
    sb = head["section_bytes"]
    for t in range(head["nthreads"]):
        base = head["sections_at"] + t * sb
        s = dict(zip(L.STATS_SECTION_FIELDS, L.STATS_SECTION.unpack(_pread(fd, base, L.STATS_SECTION.size,
                                                                             f"thread section {t}"))))
        if s["magic"] != L.MAGIC_STATS_SECTION or s["mode"] == 0:
            continue
        if s["mode"] + s["mode_bytes"] > sb or s["mode_bytes"] < L.STATS_PAPI.size:
            raise Damaged(f"thread section {t}: its PAPI counts lie outside it")
        area = _pread(fd, base + s["mode"], s["mode_bytes"], f"thread section {t}'s PAPI counts")
        h = _record(L.STATS_PAPI, L.STATS_PAPI_FIELDS, area)
        if h["events"] == 0:
            continue  # the thread's event set did not start, or it never made an MPI call
        if h["events"] != n or h["nfunc"] != nfunc:
            raise Damaged(f"thread section {t}: PAPI counts of {h['events']} events and {h['nfunc']} functions "
                          f"({n} and {nfunc} named)")
        compute += _papi_part(area, h, "compute", "<i8", paths * n, t).reshape(paths, n)
        mpi_path += _papi_part(area, h, "mpi_path", "<i8", paths * n, t).reshape(paths, n)
        mpi_fn += _papi_part(area, h, "mpi_fn", "<i8", nfunc * n, t).reshape(nfunc, n)
        compute_ticks += _papi_part(area, h, "compute_ticks", "<u8", paths, t)
        phases += _papi_part(area, h, "phases", "<u8", paths, t)
        fn_ticks += _papi_part(area, h, "fn_ticks", "<u8", nfunc, t)
        reads, read_ticks, unread, threads = reads + h["reads"], read_ticks + h["read_ticks"], unread + h["unread"], \
            threads + 1
    if threads == 0:
        return None
    regions, funcs = names[L.STATS_NAME_KIND_REGION], names[L.STATS_NAME_KIND_FUNCTION]
    doc = {"schema": L.SCHEMA_PAPI, "rank": rank, "events": events, "refused": "", "off_reason": "",
           "threads": threads, "reads": int(reads), "unread_calls": int(unread),
           "read_cost_ns": read_ticks / rate / reads if reads else 0.0,
           "regions": [{"path": _region_path(regions, p), "compute_s": float(compute_ticks[p]) / rate * 1e-9,
                        "phases": int(phases[p]), "compute": compute[p].tolist(), "mpi": mpi_path[p].tolist()}
                       for p in range(paths) if phases[p]],
           "functions": {funcs[f][2].decode("utf-8", "surrogateescape"):
                         {"time_s": float(fn_ticks[f]) / rate * 1e-9, "counts": mpi_fn[f].tolist()}
                         for f in range(nfunc) if fn_ticks[f] and f in funcs}}
    return Virtual("", rank, json.dumps(doc).encode("utf-8", "surrogateescape"))
