"""OTF2 export of a trace: an archive for Vampir and the Score-P tools (`mpilens export otf2`).

What is written, per location (one per thread of each rank; thread 0 of rank r is rank r of the
MPI location group):
- Enter/Leave of every MPI call (regions of paradigm MPI, with the role of the function: point to
  point, one-to-all, all-to-one, all-to-all or other collective, barrier, file I/O, RMA) and of
  every mpilens region (paradigm USER, role CODE);
- MpiSend/MpiRecv for blocking point-to-point calls; MpiIsend + MpiIsendComplete and
  MpiIrecvRequest + MpiIrecv for nonblocking and persistent ones (one pair per start), linked by a
  request id, at the post (or start) and in the call that completed them;
- MpiCollectiveBegin/End around the blocking collectives, with the operation, the root as a rank
  of the communicator (undefined for rootless operations) and the bytes this rank sent and
  received (as mpilens counts them); NonBlockingCollectiveRequest + NonBlockingCollectiveComplete
  (the same facts, linked by a request id) for the nonblocking ones (MPI_Ibcast, ...) and each
  start of a persistent one (MPI_Bcast_init, ...).
Every communicator the events name is a communicator definition with its group of world ranks;
ranks in message records are ranks of that communicator, as OTF2 requires. An operation that
moved nothing (cancelled, MPI_PROC_NULL, never completed) gets no message record."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from .. import meta as meta_file
from .. import units
from ..trace import reader
from ..trace.timeline import (
    RECV_BLOCKING,
    RECV_NONBLOCKING,
    RECV_PERSISTENT,
    SEND_BLOCKING,
    SEND_NONBLOCKING,
    SEND_PERSISTENT,
    STARTS,
    Timeline,
)
from . import Exporter, Progress, exporter

RESOLUTION = 1_000_000_000  # ticks per second: ns
UNDEFINED_ROOT = 0xFFFFFFFF  # OTF2_UNDEFINED_UINT32: a collective without a root

# collective operations with a root, and OTF2's region role of each collective
ROOTED = {"MPI_Bcast", "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Reduce"}
ONE2ALL = {"MPI_Bcast", "MPI_Scatter", "MPI_Scatterv"}
ALL2ONE = {"MPI_Gather", "MPI_Gatherv", "MPI_Reduce"}
ALL2ALL = {"MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Allreduce",
           "MPI_Reduce_scatter", "MPI_Reduce_scatter_block"}
COLLECTIVE_OPS = ROOTED | ALL2ALL | {"MPI_Barrier", "MPI_Scan", "MPI_Exscan"}
# nonblocking collectives, by the blocking one they are the start of: MPI_Ibcast -> MPI_Bcast
NONBLOCKING_COLLECTIVES = {"MPI_I" + name[4].lower() + name[5:]: name for name in COLLECTIVE_OPS}
PERSISTENT_COLLECTIVES = {name + "_init": name for name in COLLECTIVE_OPS}  # MPI-4: started by MPI_Start
# the fields of an event a location's writer reads, after its index (in this order), and how many
# events it reads into Python values at a time
FIELDS = ("kind", "fn", "t0", "t1", "comm", "dst", "src", "stag", "rtag", "sent", "recv", "req")
WINDOW = 1 << 16
SENDRECV_NB = {"MPI_Isendrecv", "MPI_Isendrecv_replace"}  # a send and a receive on one request


def _base(name: str) -> str:
    """The function without the large-count suffix: MPI_Send_c -> MPI_Send."""
    return name[:-2] if name.endswith("_c") else name


def _role(o, name: str, cls: str):
    base = _base(name)
    base = NONBLOCKING_COLLECTIVES.get(base, base)
    if cls == "collective":
        if base == "MPI_Barrier":
            return o.RegionRole.BARRIER
        if base in ONE2ALL:
            return o.RegionRole.COLL_ONE2ALL
        if base in ALL2ONE:
            return o.RegionRole.COLL_ALL2ONE
        if base in ALL2ALL:
            return o.RegionRole.COLL_ALL2ALL
        return o.RegionRole.COLL_OTHER
    return {"p2p": o.RegionRole.POINT2POINT, "io": o.RegionRole.FILE_IO,
            "rma": o.RegionRole.RMA}.get(cls, o.RegionRole.FUNCTION)


def _hosts(tl: Timeline) -> list[str]:
    """The host of each rank (meta.json), "host" when unknown."""
    meta = meta_file.load(tl.rundir, []) or {}  # the timeline names what is wrong with it
    if "rank_host" not in meta or "hosts" not in meta:
        return ["host"] * tl.nranks
    hosts = [meta["hosts"][h] for h in meta["rank_host"]][:tl.nranks]
    return hosts + ["host"] * (tl.nranks - len(hosts))


def otf2(tl: Timeline, out: Path, progress: Progress = None) -> dict[str, int]:
    """Write an OTF2 archive (out is the archive directory; out/traces.otf2 is its anchor)."""
    import otf2 as o

    ev = tl.ev
    counts: dict[str, int] = defaultdict(int)
    with o.writer.open(str(out), timer_resolution=RESOLUTION) as trace:
        defs = trace.definitions
        machine = defs.system_tree_node("machine")
        nodes: dict[str, object] = {}
        groups = {}
        for r, host in enumerate(_hosts(tl)):
            if host not in nodes:
                nodes[host] = defs.system_tree_node(host, class_name="node", parent=machine)
            groups[r] = defs.location_group(f"MPI rank {r}", system_tree_parent=nodes[host])
        threads = sorted({(int(a), int(b)) for a, b in zip(ev["rank"], ev["thread"])} | {(r, 0) for r in range(tl.nranks)})
        locations = {key: defs.location(f"rank {key[0]} thread {key[1]}" if key[1] else f"rank {key[0]}",
                                        group=groups[key[0]], type=o.LocationType.CPU_THREAD) for key in threads}
        defs.group("MPI ranks", members=[locations[(r, 0)] for r in range(tl.nranks)],
                   group_type=o.GroupType.COMM_LOCATIONS, paradigm=o.Paradigm.MPI)
        world_group = defs.group("MPI_COMM_WORLD", members=list(range(tl.nranks)), group_type=o.GroupType.COMM_GROUP,
                                 paradigm=o.Paradigm.MPI)
        world = defs.comm("MPI_COMM_WORLD", group=world_group)
        # every intracommunicator whose members are all in MPI_COMM_WORLD: (definition, world rank -> rank)
        comms: dict[int, tuple[object, dict[int, int]]] = {}
        defined = 0  # communicators defined besides MPI_COMM_WORLD
        everyone = tuple(range(tl.nranks))
        for uid, (ranks, remote) in sorted(tl.comms.items(), key=lambda c: c[1]):
            if remote or not ranks or min(ranks) < 0 or max(ranks) >= tl.nranks:
                continue  # an intercommunicator, or members outside MPI_COMM_WORLD: not defined
            if uid == tl.world_uid or (tl.world_uid is None and ranks == everyone):
                comms[uid] = (world, {r: r for r in everyone})
                continue
            k = defined
            defined += 1
            label = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
            g = defs.group(f"communicator {k} (world ranks {label})", members=list(ranks),
                           group_type=o.GroupType.COMM_GROUP, paradigm=o.Paradigm.MPI)
            comms[uid] = (defs.comm(f"communicator {k} ({len(ranks)} ranks)", group=g),
                          {w: i for i, w in enumerate(ranks)})
        # an event on a communicator whose members are not known (an intercommunicator, a trace of
        # an earlier version): its messages are written on MPI_COMM_WORLD with world ranks, which
        # are exact; its collectives get no collective records (their members are unknown)
        fallback = (world, {r: r for r in everyone})

        def comm_of(uid: int) -> tuple[object, dict[int, int]]:
            return comms.get(uid) or fallback

        regions: dict[tuple[str, bool], object] = {}

        def region(name: str, mpi: bool, cls: str = "") -> object:
            if (name, mpi) not in regions:
                regions[(name, mpi)] = defs.region(  # OTF2 takes text: a name's other bytes escaped
                    units.printable(name, controls=True), paradigm=o.Paradigm.MPI if mpi else o.Paradigm.USER,
                    region_role=_role(o, name, cls) if mpi else o.RegionRole.CODE)
            return regions[(name, mpi)]

        ops = _Operations(tl, comm_of, comms, counts)
        if progress:
            progress("OTF2: events")
        ev_rank, ev_thread = ev["rank"], ev["thread"]
        bounds = np.flatnonzero(np.diff(ev_rank.astype(np.int64) * 2**32 + ev_thread) != 0) + 1
        for chunk in np.split(np.arange(len(ev)), bounds):
            if len(chunk):
                key = (int(ev_rank[chunk[0]]), int(ev_thread[chunk[0]]))
                _Location(tl, trace.event_writer_from_location(locations[key]), key[0], region, ops, comms, counts,
                          o).write(chunk)
        if tl.realtime_origin_ns is not None:
            # the calendar time of the global offset (the first time stamp written): the writer
            # would take the time of the export
            trace._realtime_timestamp = (tl.realtime_origin_ns + (trace._first_timestamp or 0)) / RESOLUTION
    counts["communicators"] = 1 + defined
    counts["events"] = sum(v for k, v in counts.items() if k != "communicators")
    return dict(counts)


class _Operations:
    """Nonblocking and persistent operations: each start (the post, or an MPI_Start of a persistent
    one) paired with its completion, the k-th start with the k-th completion of the same request."""

    def __init__(self, tl: Timeline, comm_of, comms: dict, counts: dict[str, int]) -> None:
        ev = tl.ev.columns  # a plain dict of the columns: faster to index one event at a time
        self.ev, self.comm_of, self.counts = ev, comm_of, counts
        base = [_base(n) for n in tl.functions]
        self.sends = {f for f, b in enumerate(base) if b in SEND_NONBLOCKING | SEND_PERSISTENT | SENDRECV_NB}
        self.recvs = {f for f, b in enumerate(base) if b in RECV_NONBLOCKING | RECV_PERSISTENT}
        self.starts = {f for f, b in enumerate(base) if b in STARTS}
        # nonblocking and persistent collectives: fn -> the blocking one's name (its operation,
        # whether rooted); the nonblocking ones start at their call, the persistent ones at MPI_Start
        self.nonblocking = {f: NONBLOCKING_COLLECTIVES[b] for f, b in enumerate(base) if b in NONBLOCKING_COLLECTIVES}
        self.collectives = self.nonblocking | {f: PERSISTENT_COLLECTIVES[b] for f, b in enumerate(base)
                                               if b in PERSISTENT_COLLECTIVES}
        self.comms = comms
        import otf2

        self.collective_op = lambda name: getattr(otf2.CollectiveOp, name[4:].upper())
        # the operation's defining call (its post, or the init of a persistent one)
        self.defining: dict[tuple[int, int], int] = {}
        for i in np.flatnonzero((ev["kind"] == reader.CALL) & (ev["req"] > 0)):
            if int(ev["fn"][i]) not in self.starts:
                self.defining[(int(ev["rank"][i]), int(ev["req"][i]))] = int(i)
        done = np.flatnonzero(ev["kind"] == reader.DONE)
        completions: dict[tuple[int, int], list[int]] = defaultdict(list)
        for i in done[np.argsort(ev["t0"][done], kind="stable")]:
            completions[(int(ev["rank"][i]), int(ev["req"][i]))].append(int(i))
        # the starts of each operation in time order: its post, or each MPI_Start(all) of it
        starts: dict[tuple[int, int], list[int]] = defaultdict(list)
        calls = np.flatnonzero((ev["kind"] == reader.CALL) & (ev["req"] > 0))
        for i in calls[np.argsort(ev["t0"][calls], kind="stable")]:
            key = (int(ev["rank"][i]), int(ev["req"][i]))
            f = int(ev["fn"][i])
            if f in self.starts or f in self.nonblocking or base[f] in SEND_NONBLOCKING | RECV_NONBLOCKING | SENDRECV_NB:
                starts[key].append(int(i))
        # decided before any location is written: a completion may be on another thread than its start
        self.send_of: dict[int, int] = {}  # start event -> completion event, for sends that moved data
        self.recv_of: dict[int, int] = {}  # the same for receives
        self.coll_of: dict[int, int] = {}  # the same for nonblocking collectives on a known communicator
        for key, events in starts.items():
            op = self.defining.get(key)
            if op is None:
                continue
            for s, d in zip(events, completions.get(key, [])):  # cancelled or freed: no k-th completion
                if int(ev["fn"][op]) in self.sends:
                    dst = int(ev["dst"][d]) if ev["dst"][d] >= 0 else int(ev["dst"][op])
                    if dst in comm_of(int(ev["comm"][op]))[1]:
                        self.send_of[s] = d
                if int(ev["fn"][op]) in self.recvs and ev["src"][d] >= 0:
                    self.recv_of[s] = d
                if int(ev["fn"][op]) in self.collectives and int(ev["comm"][op]) in comms:
                    self.coll_of[s] = d
        self.sent_done, self.recv_done = set(self.send_of.values()), set(self.recv_of.values())
        self.coll_done = set(self.coll_of.values())

    def start(self, w, time: int, i: int) -> None:
        """MpiIsend / MpiIrecvRequest of start event i, when the completion it pairs with moved
        data. A request's id is 2 x its number for the send, that plus 1 for the receive
        (MPI_Isendrecv is both)."""
        ev = self.ev
        req = int(ev["req"][i])
        if i in self.send_of:
            op, d = self.defining[(int(ev["rank"][i]), req)], self.send_of[i]
            dst = int(ev["dst"][d]) if ev["dst"][d] >= 0 else int(ev["dst"][op])
            comm, rank_in = self.comm_of(int(ev["comm"][op]))
            w.mpi_isend(time, rank_in[dst], comm, int(ev["stag"][op]) & 0xFFFFFFFF, int(ev["sent"][d]), 2 * req)
            self.counts["isend"] += 1
        if i in self.recv_of:
            w.mpi_irecv_request(time, 2 * req + 1)
            self.counts["irecv_request"] += 1
        if i in self.coll_of:
            w.non_blocking_collective_request(time, 2 * req)
            self.counts["collective_request"] += 1

    def complete(self, w, time: int, d: int) -> None:
        """MpiIsendComplete / MpiIrecv of completion event d, when its start was written."""
        ev = self.ev
        req = int(ev["req"][d])
        if d in self.sent_done:
            w.mpi_isend_complete(time, 2 * req)
            self.counts["isend_complete"] += 1
        if d in self.recv_done:
            comm, rank_in = self.comm_of(int(ev["comm"][d]))
            src = int(ev["src"][d])
            w.mpi_irecv(time, rank_in.get(src, src), comm, int(ev["rtag"][d]) & 0xFFFFFFFF, int(ev["recv"][d]),
                        2 * req + 1)
            self.counts["irecv"] += 1
        if d in self.coll_done:
            op = self.defining[(int(ev["rank"][d]), req)]  # the call, or MPI_Xxx_init
            name = self.collectives[int(ev["fn"][op])]
            comm, rank_in = self.comms[int(ev["comm"][op])]
            root = rank_in.get(int(ev["dst"][op]), UNDEFINED_ROOT) if name in ROOTED else UNDEFINED_ROOT
            w.non_blocking_collective_complete(time, self.collective_op(name), comm, root, int(ev["sent"][d]),
                                               int(ev["recv"][d]), 2 * req)
            self.counts["collective_complete"] += 1


class _Location:
    """The records of one location (a thread of a rank), from its events in time order. Records of
    a call (messages, collective begin and end, completions) are written inside its Enter/Leave."""

    def __init__(self, tl: Timeline, w, rank: int, region, ops: _Operations, comms, counts: dict[str, int], o) -> None:
        self.tl, self.w, self.rank, self.region, self.ops, self.comms, self.counts, self.o = (
            tl, w, rank, region, ops, comms, counts, o)
        base = [_base(n) for n in tl.functions]
        self.base = base
        self.send_block = {f for f, b in enumerate(base) if b in SEND_BLOCKING}
        self.recv_block = {f for f, b in enumerate(base) if b in RECV_BLOCKING}
        self.posts = {f for f, b in enumerate(base) if b in SEND_NONBLOCKING | RECV_NONBLOCKING | SENDRECV_NB}
        self.coll = {f for f, b in enumerate(base) if b in COLLECTIVE_OPS}
        self.ev = tl.ev.columns
        self.last = 0
        # the call whose Leave is not written yet: (fn, t1, request), and its records written before
        # its Leave; the calls are read window by window, so it is kept by value
        self.open_call: tuple[int, float, int] | None = None
        self.open_t0 = 0.0
        self.at_end: list[tuple[str, tuple]] = []
        self.regions: list[int] = []  # open mpilens regions (path ids)

    def at(self, t: float) -> int:
        """ns of a time, never before the location's previous record (OTF2 requires the order)."""
        self.last = max(int(t * RESOLUTION + 0.5), self.last, 0)
        return self.last

    def close(self) -> None:
        if self.open_call is None:
            return
        f, t1, _ = self.open_call
        t1 = self.at(t1)
        for what, args in self.at_end:
            if what == "recv":
                self.w.mpi_recv(t1, *args)
            else:
                self.w.mpi_collective_end(t1, *args)
        self.w.leave(t1, self.region(self.tl.functions[f], True, self.tl.classes[f]))
        self.counts["leave"] += 1
        self.open_call, self.at_end = None, []

    def write(self, chunk: np.ndarray) -> None:
        """The records of the location's events (indices into the timeline, in time order), read
        a window at a time as Python values (one event's fields from numpy one by one cost more
        than writing its record)."""
        for w0 in range(0, len(chunk), WINDOW):
            idx = chunk[w0:w0 + WINDOW]
            for e in zip(idx.tolist(), *(self.ev[name][idx].tolist() for name in FIELDS)):
                k = e[1]
                if k == reader.CALL:
                    self.call(e)
                elif k == reader.DONE:
                    i, _, _, t, *_, req = e
                    if self.open_call is not None and t > self.open_call[1]:
                        if self.open_call[2] == req:
                            t = self.open_call[1]  # complete when posted (MPICH's eager sends): in the post
                        else:
                            self.close()  # a completion outside the call that returned it
                    self.ops.complete(self.w, self.at(t), i)
                elif k == reader.REGION_BEGIN:
                    self.close()
                    self.regions.append(e[2])
                    self.w.enter(self.at(e[3]), self.region(self.tl.region_name(self.rank, e[2]), False))
                    self.counts["enter"] += 1
                elif k == reader.REGION_END and self.regions:
                    self.close()
                    self.w.leave(self.at(e[3]), self.region(self.tl.region_name(self.rank, self.regions.pop()), False))
                    self.counts["leave"] += 1
        self.close()
        while self.regions:  # regions still open at the end of the trace
            self.w.leave(self.last, self.region(self.tl.region_name(self.rank, self.regions.pop()), False))
            self.counts["leave"] += 1

    def call(self, e: tuple) -> None:
        i, _, f, t0, t1, comm_uid, dst, src, stag, rtag, sent, recv, req = e
        w, o = self.w, self.open_call
        # MPI_Startall writes one event per request, all with the call's times: one call
        if not (o is not None and f in self.ops.starts and o[0] == f and self.open_t0 == t0 and o[1] == t1):
            self.close()
            w.enter(self.at(t0), self.region(self.tl.functions[f], True, self.tl.classes[f]))
            self.counts["enter"] += 1
            self.open_call, self.open_t0 = (f, t1, req), t0
        t0 = self.at(t0)
        if req and (f in self.ops.starts or f in self.posts or f in self.ops.nonblocking):
            self.ops.start(w, t0, i)
        if f in self.send_block and dst >= 0:
            comm, rank_in = self.ops.comm_of(comm_uid)
            if dst in rank_in:
                w.mpi_send(t0, rank_in[dst], comm, stag & 0xFFFFFFFF, sent)
                self.counts["send"] += 1
        if f in self.recv_block and src >= 0:
            comm, rank_in = self.ops.comm_of(comm_uid)
            if src in rank_in:
                self.at_end.append(("recv", (rank_in[src], comm, rtag & 0xFFFFFFFF, recv)))
                self.counts["recv"] += 1
        if f in self.coll and comm_uid in self.comms:
            comm, rank_in = self.comms[comm_uid]
            root = rank_in.get(dst, UNDEFINED_ROOT) if self.base[f] in ROOTED else UNDEFINED_ROOT
            w.mpi_collective_begin(t0)
            self.at_end.append(("coll", (getattr(self.o.CollectiveOp, self.base[f][4:].upper()), comm, root, sent,
                                         recv)))
            self.counts["collective_begin"] += 1
            self.counts["collective_end"] += 1

exporter(Exporter("otf2", "a trace as an OTF2 archive (Vampir, Score-P tools); written into a new directory", "trace",
                  "-otf2", otf2, directory=True))
