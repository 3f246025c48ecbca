"""Read the per-rank trace files of trace mode (trace/rank-NNNNNN.bin; format in
runtime/src/trace.c) into numpy arrays, one rank at a time, without copying more than one rank's
events. A block cut short (the process was killed while writing it) is detected and skipped."""

from __future__ import annotations

import json
import mmap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..errors import RunDirectoryError

# kinds of events
CALL, DONE, REGION_BEGIN, REGION_END, COUNTER = 1, 2, 3, 4, 5

EVENT = np.dtype([("t0", "<u8"), ("t1", "<u8"), ("kind", "<u2"), ("fn", "<u2"), ("comm", "<u4"), ("dst", "<i4"),
                  ("src", "<i4"), ("stag", "<i4"), ("rtag", "<i4"), ("sent", "<i8"), ("recv", "<i8"), ("req", "<u8")])
assert EVENT.itemsize == 64
BLOCK = np.dtype([("magic", "S8"), ("thread", "<u4"), ("count", "<u4"), ("number", "<u8"), ("tick", "<u8"),
                  ("ns", "<u8")])


@dataclass
class RankTrace:
    """One rank's events (in file order within each thread) and what is needed to read them."""

    rank: int
    events: np.ndarray  # EVENT records
    thread: np.ndarray  # thread number of each event
    head: dict[str, Any]
    trailer: dict[str, Any] | None
    clock_points: list[tuple[int, int]]  # (tick, ns) pairs: head, every block, trailer
    problems: list[str] = field(default_factory=list)
    same_host_as_rank0: bool = False  # then its clock is rank 0's: the measured offsets are noise

    @property
    def functions(self) -> list[str]:
        return self.head["functions"]

    @property
    def complete(self) -> bool:
        return bool(self.trailer and self.trailer.get("complete"))

    def to_seconds(self, ticks: np.ndarray) -> np.ndarray:
        """Convert ticks to seconds on rank 0's clock (CLOCK_MONOTONIC), aligned with the
        offsets measured at MPI_Init and MPI_Finalize (linear drift between them)."""
        pts = np.array(self.clock_points, dtype=np.float64)
        if len(pts) >= 2 and pts[-1, 0] > pts[0, 0]:
            rate = (pts[-1, 1] - pts[0, 1]) / (pts[-1, 0] - pts[0, 0])  # ns per tick
        else:
            rate = 1.0
        ns = pts[0, 1] + (ticks.astype(np.float64) - pts[0, 0]) * rate
        offsets = [] if self.same_host_as_rank0 else (self.trailer or self.head).get("offset_ns", [])
        if len(offsets) >= 2 and offsets[1][0] > offsets[0][0]:
            (a0, o0), (a1, o1) = offsets[0], offsets[1]
            off = o0 + (ns - a0) * (o1 - o0) / (a1 - a0)
        elif offsets:
            off = offsets[0][1]
        else:
            off = 0.0
        return (ns - off) * 1e-9


def _json_block(data: memoryview, pos: int) -> tuple[dict[str, Any], int]:
    end = bytes(data[pos:pos + (1 << 24)]).find(b"MLTE0001")
    if end < 0:
        raise ValueError("a metadata block has no end")
    return json.loads(bytes(data[pos:pos + end])), pos + end + 8


def read_rank(path: Path) -> RankTrace:
    """Read one rank's trace file; raise RunDirectoryError when it is not one."""
    with path.open("rb") as f:
        size = f.seek(0, 2)
        if size < 16:
            raise RunDirectoryError(f"{path.name} is empty or truncated ({size} bytes)")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    data = memoryview(mm)
    if bytes(data[:8]) != b"MLTH0001":
        raise RunDirectoryError(f"{path.name} is not an mpilens trace file")
    try:
        head, pos = _json_block(data, 8)
    except (ValueError, json.JSONDecodeError) as err:
        raise RunDirectoryError(f"{path.name}: damaged head ({err})") from err
    trailer = None
    problems: list[str] = []
    chunks: list[tuple[int, int, int]] = []  # (offset of events, count, thread)
    clock = [(head["tick0"], head["ns0"])]
    while pos + 8 <= size:
        magic = bytes(data[pos:pos + 8])
        if magic == b"MLTB0001":
            if pos + BLOCK.itemsize > size:
                problems.append(f"{path.name}: last block cut short at byte {pos} (skipped)")
                break
            b = np.frombuffer(bytes(data[pos:pos + BLOCK.itemsize]), dtype=BLOCK)[0]
            start = pos + BLOCK.itemsize
            if start + int(b["count"]) * EVENT.itemsize > size:
                problems.append(f"{path.name}: last block cut short at byte {pos} (skipped)")
                break
            chunks.append((start, int(b["count"]), int(b["thread"])))
            clock.append((int(b["tick"]), int(b["ns"])))
            pos = start + int(b["count"]) * EVENT.itemsize
        elif magic == b"MLTM0001":
            try:
                trailer, pos = _json_block(data, pos + 8)
            except (ValueError, json.JSONDecodeError):
                problems.append(f"{path.name}: damaged trailer (skipped)")
                break
        else:
            problems.append(f"{path.name}: unknown data at byte {pos} (the rest is skipped)")
            break
    if trailer is not None:
        clock.append((trailer["tick1"], trailer["ns1"]))
    n = sum(c for _, c, _ in chunks)
    events = np.empty(n, dtype=EVENT)
    thread = np.empty(n, dtype=np.uint32)
    i = 0
    for start, count, th in chunks:
        events[i:i + count] = np.frombuffer(data, dtype=EVENT, count=count, offset=start)
        thread[i:i + count] = th
        i += count
    del data  # the map closes when the last view of it is gone
    clock.sort()
    return RankTrace(int(head["rank"]), events, thread, head, trailer, clock, problems)


def trace_files(rundir: str | Path) -> list[Path]:
    """The trace files of a run directory, by rank; RunDirectoryError when there are none."""
    files = sorted(Path(rundir, "trace").glob("rank-*.bin"))
    if not files:
        raise RunDirectoryError(f"{rundir}: no trace (run with `mpilens run --mode trace`)")
    return files


def read_all(rundir: str | Path) -> Iterator[RankTrace]:
    """Read the ranks of a run one after the other. Ranks on rank 0's host share its clock
    (CLOCK_MONOTONIC is per host), so only ranks on other hosts get the measured offsets."""
    try:
        meta = json.loads(Path(rundir, "meta.json").read_text())
        host_of = meta["rank_host"]
    except (OSError, ValueError, KeyError):
        host_of = None
    for f in trace_files(rundir):
        rt = read_rank(f)
        rt.same_host_as_rank0 = bool(host_of) and rt.rank < len(host_of) and host_of[rt.rank] == host_of[0]
        yield rt
