"""OTF2 export of a trace: an archive for Vampir and the Score-P tools (`mpilens export otf2`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..trace import reader
from ..trace.timeline import Timeline
from . import Exporter, Progress, exporter
from .common import region_visits


def otf2(tl: Timeline, out: Path, progress: Progress = None) -> dict[str, int]:
    """Write an OTF2 archive (out is the archive directory; out/traces.otf2 is its anchor):
    Enter/Leave for MPI calls and regions, MpiSend/MpiRecv for matched messages, collective
    begin/end. Ranks in message records are MPI_COMM_WORLD ranks (one communicator definition)."""
    import otf2 as o

    ev = tl.ev
    resolution = 1_000_000_000  # ns
    m = tl.messages
    sends = {int(s): k for k, s in enumerate(m.send_ev)}
    recvs = {int(r): k for k, r in enumerate(m.recv_ev)}
    coll_ids = {i for i, c in enumerate(tl.classes) if c == "collective"}
    with o.writer.open(str(out), timer_resolution=resolution) as trace:
        root = trace.definitions.system_tree_node("machine")
        groups = {r: trace.definitions.location_group(f"rank {r}", system_tree_parent=root) for r in range(tl.nranks)}
        regions: dict[str, object] = {}

        def region(name: str, paradigm: str) -> object:
            if name not in regions:
                regions[name] = trace.definitions.region(
                    name, paradigm=o.Paradigm.MPI if paradigm == "mpi" else o.Paradigm.USER,
                    region_role=o.RegionRole.FUNCTION)
            return regions[name]

        # locations: thread 0 of every rank first, so that rank r is location r of the MPI groups
        threads = sorted({(int(a), int(b)) for a, b in zip(ev["rank"], ev["thread"])} | {(r, 0) for r in range(tl.nranks)})
        locations = {key: trace.definitions.location(f"rank {key[0]} thread {key[1]}", group=groups[key[0]],
                                                     type=o.LocationType.CPU_THREAD) for key in threads}
        trace.definitions.group("MPI ranks", members=[locations[(r, 0)] for r in range(tl.nranks)],
                                group_type=o.GroupType.COMM_LOCATIONS, paradigm=o.Paradigm.MPI)
        world_group = trace.definitions.group("MPI_COMM_WORLD", members=list(range(tl.nranks)),
                                              group_type=o.GroupType.COMM_GROUP, paradigm=o.Paradigm.MPI)
        comm = trace.definitions.comm("MPI_COMM_WORLD (world ranks)", group=world_group)
        ops = {f: getattr(o.CollectiveOp, name[4:].upper(), None) for f, name in enumerate(tl.functions)}
        reg = region_visits(tl)
        timeline: dict[tuple[int, int], list[tuple[float, int, object]]] = {}
        for r, th, t0, t1, name in reg:
            timeline.setdefault((r, th), []).append((t0, 0, ("enter", region(name, "user"))))
            timeline.setdefault((r, th), []).append((t1, 2, ("leave", region(name, "user"))))
        if progress:
            progress("OTF2: events")
        for i in np.flatnonzero(ev["kind"] == reader.CALL):
            e = ev[i]
            key = (int(e["rank"]), int(e["thread"]))
            reg_mpi = region(tl.functions[e["fn"]], "mpi")
            lst = timeline.setdefault(key, [])
            lst.append((float(e["t0"]), 0, ("enter", reg_mpi)))
            if int(i) in sends:
                k = sends[int(i)]
                lst.append((float(e["t0"]), 1, ("send", (int(m.dst[k]), int(m.tag[k]), int(m.bytes[k])))))
            if int(e["fn"]) in coll_ids and ops.get(int(e["fn"])) is not None:
                lst.append((float(e["t0"]), 1, ("coll_begin", None)))
                lst.append((float(e["t1"]), 1, ("coll_end", (ops[int(e["fn"])], max(int(e["dst"]), 0),
                                                               int(e["sent"]), int(e["recv"])))))
            if int(i) in recvs:
                k = recvs[int(i)]
                lst.append((float(e["t1"]), 1, ("recv", (int(m.src[k]), int(m.tag[k]), int(m.bytes[k])))))
            lst.append((float(e["t1"]), 2, ("leave", reg_mpi)))
        for i, k in recvs.items():  # receives completed by a Wait/Test: at the completion time
            if ev["kind"][i] == reader.DONE:
                key = (int(ev["rank"][i]), int(ev["thread"][i]))
                timeline.setdefault(key, []).append((float(ev["t0"][i]), 1, ("recv", (int(m.src[k]), int(m.tag[k]),
                                                                                        int(m.bytes[k])))))
        written = 0
        for (r, th), lst in sorted(timeline.items()):
            w = trace.event_writer_from_location(locations[(r, th)])
            lst.sort(key=lambda x: (x[0], x[1]))
            for t, _, (what, arg) in lst:
                time = int(max(t, 0.0) * resolution)
                if what == "enter":
                    w.enter(time, arg)
                elif what == "leave":
                    w.leave(time, arg)
                elif what == "send":
                    w.mpi_send(time, arg[0], comm, arg[1], arg[2])
                elif what == "recv":
                    w.mpi_recv(time, arg[0], comm, arg[1], arg[2])
                elif what == "coll_begin":
                    w.mpi_collective_begin(time)
                else:
                    w.mpi_collective_end(time, arg[0], comm, arg[1], arg[2], arg[3])
                written += 1
    return {"events": written, "messages": len(m.send_ev)}


exporter(Exporter("otf2", "a trace as an OTF2 archive (Vampir, Score-P tools); written into a new directory", "trace",
                  "-otf2", otf2, directory=True))
