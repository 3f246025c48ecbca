"""The merge of per-rank payloads into a profile.json document, in Python: a port of
runtime/src/core/merge.c, the merge rank 0 runs at MPI_Finalize, and of runtime/src/tools/merge_main.c,
mpilens-merge, the program that ran that merge for `mpilens report` on the payload files of a run
that did not reach MPI_Finalize (ranks/rank-NNNNNN.partial), of an MPI_Pcontrol snapshot
(pcontrol/NNNN/rank-NNNNNN.bin) and of ranks recovered from their statistics files (recover.py).
Merging here, the reader needs neither a compiler nor the checkout's build/.

``merge_payloads(files, ...)`` returns what mpilens-merge writes, as it would be read: the document
json.loads makes of its standard output (the same keys in the same order; an int where merge.c
prints an integer, a float where it prints a fraction, computed so that it is the very double
json.loads reads from merge.c's digits; names decoded as json.c escapes their bytes) and one
problem per file it cannot use, worded as its standard error's "FILE: what is wrong" lines; no
document when no file could be used (its exit status 2). ``merge_buffers`` does the same for bytes
already read (a rank's file in a container, a recovered rank).

The two merges must stay one: a change to merge.c or merge_main.c needs the same change here, and
the other way round. tests/test_merge_py.py holds them together: it runs build/bin/mpilens-merge
on the committed payloads, on damaged variants of them and on generated ones, and compares.
Magics, versions and record layouts come from mpilens._layout (runtime/spec/rundir.yaml).
"""

from __future__ import annotations

import gc
import json
import os
import stat
import struct
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from . import _layout as L
from ._layout import (
    CallsiteKeys,
    CounterKeys,
    FrameKeys,
    FunctionKeys,
    IntervalsKeys,
    MatrixEntryKeys,
    ProfileKeys,
    RankKeys,
    RegionKeys,
    SizeBinKeys,
    ToolKeys,
)
from .errors import RunDirectoryError

if TYPE_CHECKING:  # numpy is imported where it is used: the command line imports mpilens.payload,
    import numpy as np  # and must not start numpy's threads (tests/test_python_api.py)

K = TypeVar("K", bound=Hashable)

U64 = (1 << 64) - 1
LONG_MAX = (1 << 63) - 1
NS_PER_S = 1_000_000_000
EXACT = 1 << 53  # below it a count of nanoseconds is a double exactly (float64 division is then exact-rounded)
HEAD, TAIL = L.PAYLOAD_HEAD, L.PAYLOAD_TAIL
_H = {name: i for i, name in enumerate(L.PAYLOAD_HEAD_FIELDS)}
# the head of versions 2 and 3: the same without recv_unknown (its last field, a u64)
assert L.PAYLOAD_HEAD_FIELDS[-1] == "recv_unknown" and HEAD.format.endswith("Q")
HEAD_V3 = struct.Struct(HEAD.format[:-1])
MAGIC_LEN = len(L.MAGIC_PAYLOAD)
FAMILY = L.MAGIC_PAYLOAD[:4]  # merge.c checks these 4 bytes first: a payload of some version
_U32, _U16 = struct.Struct("<I"), struct.Struct("<H")
COUNTER_IDS = 65536 // 64  # merge.c's gid[]: the user counter ids a rank's table may use
MAX_FRAMES = 64  # merge.c's frames[64]: a call site keeps its first 64 frames
NO_MODULE = 0xFFFFFFFF  # UINT32_MAX: a frame in no module of the rank's table
# merge.c writes this literally; it is the spec's intervals path with the rank as NNNNNN


# ------------------------------------------------------------------------------------ reading
def read_file(path: str | os.PathLike[str]) -> bytes:
    """A payload file's bytes as merge_main.c reads them: only a regular file, never through a
    symbolic link (a FIFO would block, a device never end). OSError otherwise, with merge_main.c's
    errno: ELOOP for a link, EINVAL for what is not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(22, os.strerror(22))  # EINVAL, as merge_main.c sets it
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


class _Cut(Exception):
    """A payload's body ends before its tables do (merge.c's cursor goes bad)."""


@dataclass
class _Payload:
    """One whole payload (merge.c's rankrec_t): its head, its named tables read, the others as the
    offset and count of their records in data."""

    data: bytes
    head: tuple[Any, ...]
    host: bytes
    regions: list[tuple[int, int, int, int, bytes]]  # path, parent, visits, ns, name
    functions: list[tuple[int, int, bytes]]  # fn, class, name
    stats: tuple[int, int]
    sizes: tuple[int, int]
    matrix: tuple[int, int]
    counter_names: list[tuple[int, int, bytes]]  # id, kind, name
    counters: tuple[int, int]
    callsite_depth: int  # 0: none recorded, and in payloads of version 2
    modules: list[tuple[int, int, bytes]]  # id, bias, path
    sites: tuple[int, int]
    frames: tuple[int, int]
    intervals_recorded: int
    intervals_dropped: int
    unknown_counted: bool  # the head counts receives of unknown size (version 4 on)

    def table(self, where: tuple[int, int], dtype: np.dtype) -> np.ndarray:
        """An unnamed table's records."""
        import numpy as np

        offset, n = where
        return np.frombuffer(self.data, dtype=dtype, count=n, offset=offset)


def _parse(data: bytes, at: int) -> tuple[_Payload | None, int, str]:
    """merge.c's parse_payload and ml_payload_check: the payload at data[at:] and its length, or
    (None, 0, what is wrong) when it is not whole."""
    avail = len(data) - at
    start = data[at:at + MAGIC_LEN]
    if avail < 4 and start == FAMILY[:avail]:  # cut within its magic
        return None, 0, f"truncated: {avail} bytes, less than the head of a payload"
    if avail < 4 or start[:4] != FAMILY:
        return None, 0, "not an mpilens payload (bad magic)"
    v2 = avail >= MAGIC_LEN and start == L.MAGIC_PAYLOAD_V2
    v3 = avail >= MAGIC_LEN and start == L.MAGIC_PAYLOAD_V3
    if avail >= MAGIC_LEN and not v2 and not v3 and start != L.MAGIC_PAYLOAD:
        # printf's %.8s stops at a zero byte; bytes that are not UTF-8 read as they would from its stderr
        shown = start.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")
        return None, 0, f"a payload of another version (magic {shown}; this mpilens reads {L.MAGIC_PAYLOAD.decode()})"
    head_s = HEAD_V3 if v2 or v3 else HEAD
    if avail < head_s.size:
        return None, 0, f"truncated: {avail} bytes, less than the head of a payload"
    head = head_s.unpack_from(data, at)
    if head_s is HEAD_V3:
        head = (*head, 0)  # not counted by those versions (unknown_counted below)
    total = head[_H["total_length"]]
    if total > avail:
        return None, 0, f"truncated: {avail} of {total} bytes"
    if total < head_s.size + TAIL.size:
        return None, 0, f"damaged head (length {total})"
    end = at + total
    p = at + head_s.size

    def u32() -> int:
        nonlocal p
        if end - p < 4:
            raise _Cut
        p += 4
        return _U32.unpack_from(data, p - 4)[0]

    def string() -> bytes:
        nonlocal p
        if end - p < 2:
            raise _Cut
        n = _U16.unpack_from(data, p)[0]
        p += 2
        if end - p < n:
            raise _Cut
        p += n
        return data[p - n:p]

    def named(s: struct.Struct) -> list[tuple[Any, ...]]:
        nonlocal p
        out = []
        for _ in range(u32()):
            if end - p < s.size:
                raise _Cut
            rec = s.unpack_from(data, p)
            p += s.size
            out.append((*rec, string()))
        return out

    def unnamed(size: int) -> tuple[int, int]:
        nonlocal p
        n = u32()
        if end - p < n * size:
            raise _Cut
        p += n * size
        return p - n * size, n

    try:
        host = string()
        regions = named(L.PAYLOAD_REGION)
        functions = named(L.PAYLOAD_FUNCTION)
        stats = unnamed(L.PAYLOAD_STAT.size)
        sizes = unnamed(L.PAYLOAD_SIZE.size)
        matrix = unnamed(L.PAYLOAD_PEER.size)
        counter_names = named(L.PAYLOAD_COUNTER_NAME)
        counters = unnamed(L.PAYLOAD_COUNTER.size)
        depth, modules, sites, frames = 0, [], (p, 0), (p, 0)
        if not v2:
            if end - p < L.PAYLOAD_CALLSITES.size:
                raise _Cut
            depth = L.PAYLOAD_CALLSITES.unpack_from(data, p)[0]
            p += L.PAYLOAD_CALLSITES.size
            modules = named(L.PAYLOAD_MODULE)
            sites = unnamed(L.PAYLOAD_SITE.size)
            frames = unnamed(L.PAYLOAD_FRAME.size)
        if end - p < TAIL.size:
            raise _Cut
    except _Cut:
        # merge.c's message: its byte is the payload's end, whatever table was cut
        return None, 0, f"truncated at byte {total} of {total}"
    recorded, dropped, marker = TAIL.unpack_from(data, p)
    if marker != L.MAGIC_PAYLOAD_END or p + TAIL.size != end:
        return None, 0, "missing end marker"
    return _Payload(data, head, host, regions, functions, stats, sizes, matrix, counter_names, counters, depth,
                    modules, sites, frames, recorded, dropped, not (v2 or v3)), total, ""


def split(data: bytes) -> tuple[list[_Payload], str | None]:
    """The whole payloads a file's bytes start with (a file holds one, or several one after the
    other), and what is wrong with the rest (merge_main.c's wording: "at
    byte N: " before it when whole payloads come first), None when nothing is."""
    out, at = [], 0
    while at < len(data):
        payload, n, why = _parse(data, at)
        if payload is None:
            return out, why if at == 0 else f"at byte {at}: {why}"
        out.append(payload)
        at += n
    return out, None


# ------------------------------------------------------------------------------------ the merge
def merge_payloads(files: Sequence[str | os.PathLike[str]], nranks: int | None = None, time_sample: int = 1,
                   intervals: bool = False, version: str | None = None,
                   mpi: str | None = None) -> tuple[dict[str, Any] | None, list[tuple[Any, str]]]:
    """The profile of payload files, as `mpilens-merge [options] FILE...` writes it: nranks, the
    job's ranks (None: the most the payloads' heads say; ranks beyond it are left out),
    time_sample (MPILENS_TIME_SAMPLE; > 1 adds the estimates' keys), intervals (MPILENS_INTERVALS
    was on), version and mpi ("tool"'s keys; None: not written).

    Returns (document, problems): the document json.loads makes of mpilens-merge's output, None
    when it writes none (no file could be used: exit status 2); problems is one (file, what is
    wrong) per file that cannot be used whole ("cannot read (...)" when it cannot be read, else
    what is damaged), in order, and (None, "mpilens-merge: ...") for a complaint of its own.
    Raises ValueError for an option value mpilens-merge refuses (its usage error), and
    RunDirectoryError where mpilens-merge would write no valid JSON.
    """
    items: list[tuple[Any, bytes | OSError]] = []
    for f in files:
        try:
            items.append((f, read_file(f)))
        except OSError as err:
            items.append((f, err))
    return merge_buffers(items, nranks, time_sample, intervals, version, mpi)


def merge_buffers(items: Iterable[tuple[K, bytes | OSError]], nranks: int | None = None, time_sample: int = 1,
                  intervals: bool = False, version: str | None = None,
                  mpi: str | None = None) -> tuple[dict[str, Any] | None, list[tuple[K | None, str]]]:
    """merge_payloads of files already read: (name, bytes) each, or (name, the OSError reading it
    raised); problems name them by `name`."""
    if nranks:  # as mpilens-merge reads --nranks: (int)strtol(...)
        if not isinstance(nranks, int) or isinstance(nranks, bool):
            raise ValueError("--nranks: not a positive integer")
        nranks = (min(nranks, LONG_MAX) + (1 << 31)) % (1 << 32) - (1 << 31)
        if nranks < 1:
            raise ValueError("--nranks: not a positive integer")
    if not isinstance(time_sample, int) or isinstance(time_sample, bool) or time_sample < 1:
        raise ValueError("--time-sample: not a positive integer")
    time_sample = min(time_sample, LONG_MAX)  # strtol's
    problems: list[tuple[K | None, str]] = []
    read: list[list[_Payload]] = []
    merged, most, errno = 0, 0, 0
    for name, data in items:
        if isinstance(data, OSError):
            problems.append((name, f"cannot read ({os.strerror(data.errno or 0)})"))
            errno = data.errno or 0  # merge_main.c's errno stays that of its last failed read
            continue
        payloads, why = split(data)
        if why is not None:
            problems.append((name, why))
        if not payloads:  # an empty file is neither merged nor named
            continue
        merged += 1
        read.append(payloads)
        for x in payloads:
            n = x.head[_H["nranks"]]
            most = max(most, n - (1 << 32) if n >= 1 << 31 else n)  # merge_main.c compares it as an int
    if merged == 0:
        return None, problems
    n_ranks = nranks or most
    if n_ranks < 1:  # ml_merge_profile refuses; merge_main.c names errno, whatever it holds
        problems.append((None, f"mpilens-merge: cannot write the profile ({os.strerror(errno)})"))
        return None, problems
    # merge_main.c concatenates the whole payloads and ml_merge_profile parses them again: the same
    # bytes parse the same (a payload's checks look no further than its own length); a rank's last
    # payload is the one merged, ranks beyond the job's are left out
    ranks: dict[int, _Payload] = {}
    for payloads in read:
        for x in payloads:
            if x.head[_H["rank"]] < n_ranks:
                ranks[x.head[_H["rank"]]] = x
    # the document of thousands of ranks is millions of lists, numbers and dicts, none in a cycle:
    # the garbage collector's passes over them would cost a fifth of the time
    collecting = gc.isenabled()
    gc.disable()
    try:
        doc = _Merge(n_ranks, ranks, time_sample, intervals).document(version, mpi)
    except MemoryError:
        problems.append((None, f"mpilens-merge: cannot write the profile ({os.strerror(12)})"))  # ENOMEM
        return None, problems
    finally:
        if collecting:
            gc.enable()
    return doc, problems


def _text(name: bytes) -> str:
    """A name as json.c's ml_json_strn writes it and json.loads reads it back: up to its first zero
    byte; valid UTF-8 as is, any other byte B as the lone surrogate U+DCBB (Python's
    "surrogateescape"), control characters escaped (they read back as themselves)."""
    return name.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _number(v: float) -> int | float:
    """A user counter's value as merge.c prints it (%.17g) and json.loads reads it: 17 digits give
    the double back, and digits without a point or an exponent read as an int ("-0" as 0)."""
    s = f"{v:.17g}"
    if "inf" in s:
        raise RunDirectoryError(f"the merge of these payloads writes no valid JSON: a user counter's value is {s} "
                                "(runtime/src/core/merge.c prints it with %.17g)")
    return v if "." in s or "e" in s else int(s)


def _tool(version: str | None, mpi: str | None) -> dict[str, Any]:
    """merge.c's "tool": it writes the version and the MPI as given, unescaped, so json.loads reads
    what they say as JSON string contents."""
    text = f'{{"{ToolKeys.NAME}": "mpilens"'
    if version is not None:
        text += f', "{ToolKeys.VERSION}": "{version}"'
    if mpi is not None:
        text += f', "{ToolKeys.MPI}": "{mpi}"'
    try:
        return json.loads(text + "}")
    except json.JSONDecodeError as err:
        raise RunDirectoryError(f"the merge writes no valid JSON with version {version!r} and MPI {mpi!r} "
                                f"(written unescaped by runtime/src/core/merge.c): {err}") from None


class _Merge:
    """merge.c's table_t: functions, regions, user counters and call sites matched across ranks by
    name, in the order the ranks (by rank) first show them; values per rank."""

    def __init__(self, nranks: int, ranks: dict[int, _Payload], time_sample: int, intervals: bool):
        import numpy as np

        self.nranks, self.ranks, self.time_sample, self.intervals = nranks, ranks, time_sample, intervals
        self.present = sorted(ranks)
        absent = np.ones(nranks, dtype=bool)
        absent[self.present] = False
        self.absent = absent if len(self.present) < nranks else None  # None: every rank present
        self.functions: list[tuple[bytes, int]] = []  # name, class (of the first rank naming it)
        self.function_index: dict[bytes, int] = {}
        self.regions: list[tuple[int, bytes]] = [(0, b"")]  # parent, name; 0: the root (no region)
        self.region_index: dict[tuple[int, bytes], int] = {}
        self.region_visits: dict[int, dict[int, int]] = {}  # region -> rank -> visits (unbounded: & U64 when written)
        self.region_ns: dict[int, dict[int, int]] = {}
        self.counters: list[tuple[bytes, int]] = []  # name, kind (of the first rank naming it)
        self.counter_index: dict[bytes, int] = {}
        self.cvalues: dict[tuple[int, int], tuple[dict[int, float], dict[int, int]]] = {}  # (region, counter)
        self.modules: dict[bytes, int] = {}
        self.module_names: list[bytes] = []
        self.sites: dict[tuple[int, bytes], int] = {}  # (function, frames) -> index
        self.site_list: list[tuple[int, list[tuple[int, int]], dict[int, list[int]]]] = []
        self.any_sites = False
        stats, sizes = [], []
        gfn = np.full(65536, -1, dtype=np.int64)  # a rank's function ids (u16) -> functions; reset after each
        for r in self.present:
            stats_r, sizes_r = self._rank(r, ranks[r], gfn)
            stats.append(stats_r)
            sizes.append(sizes_r)
        self._series(stats)
        self._sizes(sizes)

    # ---- merge_rank, one rank at a time (ranks in order: the first one naming a thing places it)
    def _rank(self, rank: int, x: _Payload, gfn: np.ndarray) -> tuple[Any, Any]:
        import numpy as np

        local_fns = []
        for fn, cls, name in x.functions:
            g = self.function_index.get(name)
            if g is None:
                g = self.function_index[name] = len(self.functions)
                self.functions.append((name, cls))
            gfn[fn] = g
            local_fns.append(fn)
        # region paths -> regions; a path whose parent lies beyond every path is skipped, one
        # never named stays in the root (0), whose values are never written
        maxpath = max((reg[0] for reg in x.regions), default=0)
        local: dict[int, int] = {}
        for path, parent, visits, ns, name in x.regions:
            if parent > maxpath:
                continue
            key = (local.get(parent, 0), name)
            g = self.region_index.get(key)
            if g is None:
                g = self.region_index[key] = len(self.regions)
                self.regions.append(key)
                self.region_visits[g], self.region_ns[g] = {}, {}
            local[path] = g
            v, t = self.region_visits[g], self.region_ns[g]
            v[rank] = v.get(rank, 0) + visits
            t[rank] = t.get(rank, 0) + ns

        # per function and region path: gathered here, added up over every rank at once (_series)
        st = x.table(x.stats, L.PAYLOAD_STAT_DTYPE)
        g = gfn[st["fn"]]
        ok = (g >= 0) & (st["path"] <= maxpath)
        paths = st["path"]
        if local and ok.any():
            u, inv = np.unique(paths, return_inverse=True)
            region = np.array([local.get(int(p), 0) for p in u], dtype=np.int64)[inv.reshape(-1)]
        else:
            region = np.zeros(len(st), dtype=np.int64)
        stats = (st[ok], g[ok], region[ok], paths[ok] != 0)

        # user counters: local ids -> counters by name
        gid: dict[int, int] = {}
        for cid, kind, name in x.counter_names:
            if cid < COUNTER_IDS:
                k = self.counter_index.get(name)
                if k is None:
                    k = self.counter_index[name] = len(self.counters)
                    self.counters.append((name, kind))
                gid[cid] = k
        if x.counters[1]:
            for path, cid, value, _, when in L.PAYLOAD_COUNTER.iter_unpack(
                    x.data[x.counters[0]:x.counters[0] + x.counters[1] * L.PAYLOAD_COUNTER.size]):
                k = gid.get(cid)
                if k is None or path > maxpath:
                    continue
                self._counter_add(-1, k, rank, value, when)
                if path != 0:
                    self._counter_add(local.get(path, 0), k, rank, value, when)

        sz = x.table(x.sizes, L.PAYLOAD_SIZE_DTYPE)
        gs = gfn[sz["fn"]]
        keep = (gs >= 0) & (sz["bin"] < L.SIZE_BINS)
        sizes = (sz[keep], gs[keep])

        self._merge_sites(rank, x, gfn)
        gfn[local_fns] = -1  # back to "unknown" for the next rank: only the ids this one used
        return stats, sizes

    def _counter_add(self, region: int, k: int, rank: int, v: float, when: int) -> None:
        """merge.c's counter_add: a sum adds up (NaN: not set yet); "last" keeps the latest value."""
        if region == 0:  # the root's values are never written (merge.c keeps them apart, unused)
            return
        cv = self.cvalues.get((region, k))
        if cv is None:
            cv = self.cvalues[(region, k)] = ({}, {})
        values, whens = cv
        cur = values.get(rank, float("nan"))
        unset = cur != cur
        last_when = whens.get(rank, 0)
        if self.counters[k][1] == L.COUNTER_KIND_SUM:
            values[rank] = v if unset else cur + v
        elif unset or when >= last_when:
            values[rank] = v
        if when > last_when:
            whens[rank] = when

    def _merge_sites(self, rank: int, x: _Payload, gfn: np.ndarray) -> None:
        """merge.c's merge_sites: a rank's call sites, keyed by function and frames (module path,
        address in the module), so that the same code gives the same key on every rank."""
        import numpy as np

        if x.callsite_depth > 0:
            self.any_sites = True  # a rank that recorded call sites: "callsites" is written
        nmod = len(x.modules)
        gmod = [0] * (nmod + 1)
        for i, (mid, _, name) in enumerate(x.modules):
            if mid < nmod:
                m = self.modules.get(name)
                if m is None:
                    m = self.modules[name] = len(self.module_names)
                    self.module_names.append(name)
                gmod[i] = m
                if mid != i:
                    gmod[mid] = m
            else:
                gmod[i] = NO_MODULE
        sites = x.table(x.sites, L.PAYLOAD_SITE_DTYPE)
        if not len(sites):
            return
        frames = x.table(x.frames, L.PAYLOAD_FRAME_DTYPE)
        # frames go to sites in order: a site takes the run of frames at the cursor that names it
        # (its first 64), a site whose run is not at the cursor takes none
        fsite = frames["site"]
        starts = np.flatnonzero(np.r_[True, fsite[1:] != fsite[:-1]]) if len(frames) else np.zeros(0, np.int64)
        ends = np.r_[starts[1:], len(frames)].astype(np.int64)
        run_site = fsite[starts].tolist()
        starts_l, ends_l = starts.tolist(), ends.tolist()
        fmod = frames["module"].astype(np.int64)
        gm = np.where(fmod < nmod, np.array(gmod, dtype=np.int64)[np.minimum(fmod, nmod)], NO_MODULE)
        packed = np.empty(len(frames), dtype=[("m", "<u4"), ("a", "<u8")])
        packed["m"], packed["a"] = gm, frames["vaddr"]
        raw = packed.tobytes()
        gm_l, addr_l = gm.tolist(), frames["vaddr"].tolist()
        step = packed.dtype.itemsize
        fns = gfn[sites["fn"]].tolist()
        values = zip(sites["site"].tolist(), fns, sites["calls"].tolist(), sites["ns"].tolist(),
                     sites["sent"].view(np.uint64).tolist(), sites["recv"].view(np.uint64).tolist())
        run, nruns = 0, len(starts_l)
        for site, g, calls, ns, sent, recv in values:
            a = b = 0
            if run < nruns and run_site[run] == site:
                a, b = starts_l[run], min(ends_l[run], starts_l[run] + MAX_FRAMES)
                run += 1
            if g < 0:
                continue
            key = (g, raw[a * step:b * step])
            s = self.sites.get(key)
            if s is None:
                s = self.sites[key] = len(self.site_list)
                self.site_list.append((g, list(zip(gm_l[a:b], addr_l[a:b])), {}))
            per_rank = self.site_list[s][2]
            v = per_rank.get(rank)
            if v is None:
                per_rank[rank] = [calls, ns, sent, recv]
            else:
                v[0] += calls
                v[1] += ns
                v[2] += sent
                v[3] += recv

    # ---- the per-function values, every rank at once
    def _series(self, per_rank: list[Any]) -> None:
        """merge.c's series_of and add over every rank: per (region, function) and rank, each stat
        record added in the order merge.c adds it (the whole run's series, then the region's)."""
        import numpy as np

        nf = max(len(self.functions), 1)
        parts, codes, ranks = [], [], []
        for r, (st, g, region, in_path) in zip(self.present, per_rank):
            if not len(st):
                continue
            parts.append(st)
            codes.append(g)  # the whole run: region code 0
            sub = in_path & (region != 0)  # the root's series are never written
            parts.append(st[sub])
            codes.append(region[sub] * nf + g[sub])
            ranks += [np.full(len(st), r, dtype=np.int64), np.full(int(sub.sum()), r, dtype=np.int64)]
        self.series: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {}  # region code -> fn -> cells
        if not parts:
            self.cell = {}
            return
        code, rank = np.concatenate(codes), np.concatenate(ranks)
        order, first = _cells(code, rank)  # a cell's records in the order merge.c adds them
        rec, code, rank = np.concatenate(parts)[order], code[order], rank[order]
        cell = np.cumsum(first) - 1
        starts = np.flatnonzero(first)
        level = np.arange(len(rec)) - starts[cell]
        ncell = len(starts)
        calls, ns, mn, mx, sent, recv, timed = (np.zeros(ncell, dtype=np.uint64) for _ in range(7))
        var = np.zeros(ncell, dtype=np.float64)
        by_level = np.argsort(level, kind="stable")
        bounds = np.searchsorted(level[by_level], np.arange(level.max() + 2))
        for k in range(len(bounds) - 1):  # the k-th record of each cell: each cell once per step
            i = by_level[bounds[k]:bounds[k + 1]]
            c, x = cell[i], rec[i]
            timed[c] += x["timed"]
            se = x["se_ns"].astype(np.float64)
            var[c] += se * se  # independent estimates: variances add
            xc = x["calls"]
            counted = xc > 0
            lower = counted & ((calls[c] == 0) | (x["min_ns"] < mn[c]))
            mn[c] = np.where(lower, x["min_ns"], mn[c])
            higher = counted & (x["max_ns"] > mx[c])
            mx[c] = np.where(higher, x["max_ns"], mx[c])
            calls[c] += xc
            ns[c] += x["ns"]
            sent[c] += x["sent"].view(np.uint64)
            recv[c] += x["recv"].view(np.uint64)
        self.cell = {"calls": calls, "ns": ns, "min": mn, "max": mx, "sent": sent, "recv": recv, "timed": timed,
                     "var": var}
        code, rank = code[starts], rank[starts]
        region, fn = code // nf, code % nf
        # cells are sorted by region, function, rank: one slice per series
        sfirst = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
        send = np.r_[sfirst[1:], ncell]
        for a, b, reg, f in zip(sfirst.tolist(), send.tolist(), region[sfirst].tolist(), fn[sfirst].tolist()):
            self.series.setdefault(reg, {})[f] = (np.arange(a, b), rank[a:b])

    def _sizes(self, per_rank: list[Any]) -> None:
        """merge.c's message-size histograms, [function][bin][rank]: sums (u64, wrapping)."""
        import numpy as np

        self.hist: dict[int, dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        parts, codes, ranks = [], [], []
        for r, (sz, g) in zip(self.present, per_rank):
            if len(sz):
                parts.append(sz)
                codes.append(g * L.SIZE_BINS + sz["bin"])
                ranks.append(np.full(len(sz), r, dtype=np.int64))
        if not parts:
            return
        code, rank = np.concatenate(codes), np.concatenate(ranks)
        order, first = _cells(code, rank)
        rec = np.concatenate(parts)[order]
        first = np.flatnonzero(first)
        calls = np.add.reduceat(rec["calls"], first)  # u64 sums wrap as merge.c's do
        ns = np.add.reduceat(rec["ns"], first)
        code, rank = code[order][first], rank[order][first]
        sfirst = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
        send = np.r_[sfirst[1:], len(code)]
        for a, b, c in zip(sfirst.tolist(), send.tolist(), code[sfirst].tolist()):
            if calls[a:b].any():  # a bin no rank called is left out
                self.hist.setdefault(c // L.SIZE_BINS, {})[c % L.SIZE_BINS] = (rank[a:b], calls[a:b], ns[a:b])

    # ------------------------------------------------------------------------------------ writing
    def _dense(self, ranks: np.ndarray, values: np.ndarray, dtype: Any = "<u8") -> np.ndarray:
        import numpy as np

        out = np.zeros(self.nranks, dtype=dtype)
        out[ranks] = values
        return out

    def _ints(self, v: np.ndarray) -> list[Any]:
        """merge.c's u64_array: null for a rank that left no data (it measured nothing, not zero)."""
        if self.absent is None:
            return v.tolist()
        out = v.astype(object)
        out[self.absent] = None
        return out.tolist()

    def _seconds(self, ns: np.ndarray, null: np.ndarray | None = None) -> list[Any]:
        """merge.c's seconds_array (json.c's ml_json_seconds): a whole number of seconds is an int,
        else the decimal of the exact count, which json.loads reads as the double nearest to
        ns / 1e9: the float64 division for counts below 2**53, Python's exact-rounded int division
        above."""
        import numpy as np

        q, r = np.divmod(ns, np.uint64(NS_PER_S))
        whole = r == 0
        if self.absent is not None:
            null = self.absent if null is None else null | self.absent
        # start from the list most values belong to and put the others in (tolist is fast, a
        # Python loop is not)
        if whole.sum() * 2 > len(ns):
            out = q.tolist()
            fix = ~whole
            if null is not None:
                fix &= ~null
            for i in np.flatnonzero(fix).tolist():
                out[i] = int(ns[i]) / NS_PER_S
        else:
            out = (ns.astype(np.float64) / 1e9).tolist()
            big = ns >= np.uint64(EXACT)
            if null is not None:
                big &= ~null
            for i in np.flatnonzero(big).tolist():
                out[i] = int(ns[i]) / NS_PER_S
            qs = q.tolist()
            for i in np.flatnonzero(whole).tolist():
                out[i] = qs[i]
        if null is not None:
            for i in np.flatnonzero(null).tolist():
                out[i] = None
        return out

    def _rank_value(self, x: Any, source: str, how: str) -> Any:
        """One key of a rank's entry (runtime/spec/rundir.yaml: profile_rank_fields)."""
        if how == "text":
            return _text(x.host)
        value = x.head[_H[source]]
        if how == "seconds":
            return self._seconds1(value)
        if how == "end_reason":
            ended = L.END_REASON_NAMES.get(value, "unknown")
            return f"{ended} {x.head[_H['signo']]}" if x.head[_H["signo"]] else ended
        return value

    def _seconds1(self, ns: int) -> int | float:
        return ns // NS_PER_S if ns % NS_PER_S == 0 else ns / NS_PER_S

    def _functions(self, region: int) -> dict[str, Any]:
        """merge.c's write_functions: the series of one region (0: the whole run) by name."""
        import numpy as np

        out: dict[str, Any] = {}
        series = self.series.get(region, {})
        for f in sorted(series, key=lambda f: self.functions[f][0]):
            cells, ranks = series[f]
            name, cls = self.functions[f]
            no_calls = self._dense(ranks, self.cell["calls"][cells]) == 0  # a min or max over no call: null
            one: dict[str, Any] = {FunctionKeys.CLASS: L.FUNCTION_CLASS_NAMES.get(cls, "other")}
            # the fields as runtime/spec/rundir.yaml lists them: (key, the sum per rank, how it is written)
            for key, source, how, when in L.PROFILE_FUNCTION_FIELDS:
                if when == "time_sample" and self.time_sample <= 1:
                    continue
                if how == "seconds_se":
                    one[key] = self._seconds(_se(self._dense(ranks, self.cell[source][cells], np.float64)))
                    continue
                v = self._dense(ranks, self.cell[source][cells])
                one[key] = (self._ints(v) if how == "count" else
                            self._seconds(v, no_calls) if how == "seconds_per_call" else self._seconds(v))
            out[_text(name)] = one  # names equal up to a zero byte: the last one stays, as in json.loads
        return out

    def _counters(self, region: int) -> dict[str, Any]:
        """merge.c's write_counters: the user counters set in one region (-1: the whole run)."""
        out: dict[str, Any] = {}
        nan = float("nan")
        for k, (name, kind) in enumerate(self.counters):
            cv = self.cvalues.get((region, k))
            if cv is None:
                continue
            values = [cv[0].get(r, nan) for r in range(self.nranks)]
            out[_text(name)] = {CounterKeys.KIND: "sum" if kind == L.COUNTER_KIND_SUM else "last",
                                CounterKeys.VALUES: [None if v != v else _number(v) for v in values]}  # NaN: never touched
        return out

    def _regions(self) -> list[dict[str, Any]]:
        """merge.c's write_regions, without recursion: children in the order they were first seen."""
        import numpy as np

        top: list[dict[str, Any]] = []
        made: dict[int, dict[str, Any]] = {}
        for i in range(1, len(self.regions)):
            parent, name = self.regions[i]
            v, t = self.region_visits[i], self.region_ns[i]
            ranks = np.fromiter(v, dtype=np.int64, count=len(v))
            visits = self._dense(ranks, np.array([v[r] & U64 for r in v], dtype=np.uint64))
            ns = self._dense(ranks, np.array([t[r] & U64 for r in v], dtype=np.uint64))
            made[i] = {RegionKeys.NAME: _text(name), RegionKeys.VISITS: self._ints(visits),
                       RegionKeys.TIME_S: self._seconds(ns), RegionKeys.FUNCTIONS: self._functions(i),
                       RegionKeys.COUNTERS: self._counters(i), RegionKeys.REGIONS: []}
            (made[parent][RegionKeys.REGIONS] if parent else top).append(made[i])
        return top

    def _message_sizes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in sorted(self.hist, key=lambda f: self.functions[f][0]):
            bins = []
            for b in sorted(self.hist[f]):
                ranks, calls, ns = self.hist[f][b]
                bins.append({SizeBinKeys.BIN: b, SizeBinKeys.MIN_BYTES: 0 if b == 0 else 1 << (b - 1),
                             SizeBinKeys.MAX_BYTES: 0 if b == 0 else U64 if b == 64 else (1 << b) - 1,
                             SizeBinKeys.CALLS: self._ints(self._dense(ranks, calls)),
                             SizeBinKeys.TIME_S: self._seconds(self._dense(ranks, ns))})
            out[_text(self.functions[f][0])] = bins
        return out

    def _callsites(self) -> list[dict[str, Any]]:
        """merge.c's write_sites: by total time over the ranks (a u64 sum), the longest first;
        glibc's qsort is a merge sort, so sites of equal time stay in the order first seen."""
        import numpy as np

        rows = []
        for g, frames, per_rank in self.site_list:
            ranks = np.fromiter(per_rank, dtype=np.int64, count=len(per_rank))
            vals = np.array([[v & U64 for v in per_rank[r]] for r in per_rank], dtype=np.uint64).reshape(-1, 4)
            total = sum(vals[:, 1].tolist()) & U64
            rows.append((total, g, frames, ranks, vals))
        rows.sort(key=lambda row: -row[0])
        out = []
        for _, g, frames, ranks, vals in rows:
            out.append({CallsiteKeys.FUNCTION: _text(self.functions[g][0]),
                        CallsiteKeys.FRAMES: [{FrameKeys.MODULE: _text(self.module_names[m])
                                               if m < len(self.module_names) else None,
                                               FrameKeys.ADDRESS: a} for m, a in frames],
                        CallsiteKeys.CALLS: self._ints(self._dense(ranks, vals[:, 0])),
                        CallsiteKeys.TIME_S: self._seconds(self._dense(ranks, vals[:, 1])),
                        CallsiteKeys.BYTES_SENT: self._ints(self._dense(ranks, vals[:, 2])),
                        CallsiteKeys.BYTES_RECV: self._ints(self._dense(ranks, vals[:, 3]))})
        return out

    def document(self, version: str | None, mpi: str | None) -> dict[str, Any]:
        """ml_merge_profile's output, as json.loads reads it."""
        import numpy as np

        ranks, present = self.ranks, self.present
        h = {name: np.array([ranks[r].head[i] for r in present], dtype=np.uint64) for name, i in _H.items()
             if name != "magic"}
        complete = len(present) == self.nranks and all(ranks[r].head[_H["complete"]] for r in present)
        doc: dict[str, Any] = {ProfileKeys.SCHEMA: L.SCHEMA_PROFILE, ProfileKeys.TOOL: _tool(version, mpi),
                               ProfileKeys.COMPLETE: complete, ProfileKeys.NRANKS: self.nranks,
                               ProfileKeys.WALL_TIME_S: self._seconds1(int(h["wall_ns"].max())) if present else None}
        if self.time_sample > 1:
            doc[ProfileKeys.TIME_SAMPLE] = self.time_sample
        rows = []
        fields = [f for f in L.PROFILE_RANK_FIELDS if f[3] is None or self.time_sample > 1]
        for r in range(self.nranks):
            x = ranks.get(r)
            row: dict[str, Any] = {RankKeys.RANK: r}
            # the keys as runtime/spec/rundir.yaml lists them, null where the rank left no data
            for key, source, how, _ in fields:
                row[key] = None if x is None else self._rank_value(x, source, how)
            rows.append(row)
        doc[ProfileKeys.RANKS] = rows
        doc[ProfileKeys.FUNCTIONS] = self._functions(0)
        doc[ProfileKeys.MESSAGE_SIZES] = self._message_sizes()
        matrix = []
        for r in present:
            peers = ranks[r].table(ranks[r].matrix, L.PAYLOAD_PEER_DTYPE)
            matrix += [{MatrixEntryKeys.SRC: r, MatrixEntryKeys.DST: d, MatrixEntryKeys.MESSAGES: m,
                        MatrixEntryKeys.BYTES: b} for d, m, b in
                       zip(peers["dst"].tolist(), peers["messages"].tolist(), peers["bytes"].view(np.uint64).tolist())]
        doc[ProfileKeys.MATRIX] = matrix
        doc[ProfileKeys.COUNTERS] = self._counters(-1)
        doc[ProfileKeys.REGIONS] = self._regions()
        if self.any_sites:
            doc[ProfileKeys.CALLSITES] = self._callsites()
        if self.intervals:
            doc[ProfileKeys.INTERVALS] = {
                IntervalsKeys.RECORDED: [ranks[r].intervals_recorded if r in ranks else None for r in range(self.nranks)],
                IntervalsKeys.DROPPED: [ranks[r].intervals_dropped if r in ranks else None for r in range(self.nranks)],
                IntervalsKeys.FILES: L.PROFILE_INTERVALS_FILES}
        # sums of payload_head fields, as runtime/spec/rundir.yaml lists them; one counted since
        # version 4 is not said of payloads that did not count it
        counted_v4 = all(ranks[r].unknown_counted for r in present)
        doc[ProfileKeys.DROPPED] = {key: int(h[source].sum()) for key, source, since in L.PROFILE_DROPPED_FIELDS
                          if since is None or counted_v4}
        return doc


def _cells(code: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order that sorts records by (code, rank), keeping the records of one (code, rank) in
    their order (two stable sorts), and whether each starts a (code, rank) in that order."""
    import numpy as np

    order = np.argsort(rank, kind="stable")
    order = order[np.argsort(code[order], kind="stable")]
    c, r = code[order], rank[order]
    return order, np.r_[True, (c[1:] != c[:-1]) | (r[1:] != r[:-1])]


def _se(var: np.ndarray) -> np.ndarray:
    """merge.c's standard error in ns: (uint64_t)sqrt(var) when var > 0, else 0. Beyond 2**64 the
    C conversion is undefined; GCC's x86-64 code (cvttsd2si of x - 2**63, xor 2**63) gives 0."""
    import numpy as np

    out = np.zeros(len(var), dtype=np.uint64)
    pos = var > 0
    sq = np.sqrt(np.where(pos, var, 0.0))
    low = pos & (sq < 2.0 ** 63)
    out[low] = sq[low].astype(np.int64).astype(np.uint64)
    high = pos & (sq >= 2.0 ** 63) & (sq < 2.0 ** 64)
    out[high] = (sq[high] - 2.0 ** 63).astype(np.int64).astype(np.uint64) + np.uint64(1 << 63)
    return out
