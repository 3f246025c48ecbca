"""Read the binary per-rank records ("payloads") the runtime writes when a rank ends without
MPI_Finalize (ranks/rank-NNNNNN.partial). The layout is documented in runtime/src/payload.c."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .errors import PayloadError  # defined with the other errors of mpilens

END_REASONS = {0: "MPI_Finalize", 1: "exit without MPI_Finalize", 2: "signal", 3: "MPI_Abort",
               4: "MPI_Pcontrol snapshot"}
CLASSES = ["p2p", "collective", "rma", "completion", "probe", "io", "setup", "other"]


@dataclass
class Payload:
    """One rank's measurements."""

    rank: int
    nranks: int
    complete: bool
    reason: str
    signal: int
    threads: int
    wall_ns: int
    mpi_ns: int
    mpi_se_ns: int  # standard error of mpi_ns when it is estimated (MPILENS_TIME_SAMPLE), else 0
    init_ns: int
    dropped: dict[str, int]
    host: str
    regions: list[tuple[int, int, int, int, str]] = field(default_factory=list)  # path, parent, visits, ns, name
    functions: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (name, class)
    # (path, fn, calls, ns, min_ns, max_ns, timed calls, standard error ns, sent, recv)
    stats: list[tuple[int, int, int, int, int, int, int, int, int, int]] = field(default_factory=list)
    sizes: list[tuple[int, int, int, int]] = field(default_factory=list)  # fn, bin, calls, ns
    matrix: list[tuple[int, int, int]] = field(default_factory=list)  # dst, messages, bytes
    counter_names: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (name, "sum" | "last")
    counters: list[tuple[int, int, float, int, int]] = field(default_factory=list)
    # path, id, value, updates, when_ns
    intervals: int = 0
    intervals_dropped: int = 0


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise PayloadError(f"truncated at byte {self.pos} (needs {size} more, has {len(self.data) - self.pos})")
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return out

    def str(self) -> str:
        (n,) = self.take("=H")
        raw = self.take(f"={n}s")[0]
        return raw.decode("utf-8", "replace")


def parse(data: bytes) -> Payload:
    """Parse one payload; raise PayloadError when it is damaged."""
    r = _Reader(data)
    magic, total = r.take("=8sQ")
    if magic != b"MLPAYLD2":
        raise PayloadError("not an mpilens payload (bad magic)")
    if total > len(data):
        raise PayloadError(f"truncated: {len(data)} of {total} bytes")
    r.data = data[:total]
    rank, nranks, complete, reason, signo, threads = r.take("=6I")
    wall, mpi, mpi_se, init, d_req, d_reg, mismatch, outstanding = r.take("=8Q")
    p = Payload(rank, nranks, bool(complete), END_REASONS.get(reason, f"reason {reason}"), signo, threads, wall, mpi,
                mpi_se, init, {"requests_untracked": d_req, "region_paths": d_reg, "region_mismatches": mismatch,
                       "requests_outstanding_at_finalize": outstanding}, r.str())
    (n,) = r.take("=I")
    for _ in range(n):
        path, parent, visits, ns = r.take("=IIQQ")
        p.regions.append((path, parent, visits, ns, r.str()))
    (n,) = r.take("=I")
    for _ in range(n):
        fn, cls = r.take("=HB")
        p.functions[fn] = (r.str(), CLASSES[cls] if cls < len(CLASSES) else "other")
    (n,) = r.take("=I")
    p.stats = [r.take("=IH8Q") for _ in range(n)]
    (n,) = r.take("=I")
    p.sizes = [r.take("=HBQQ") for _ in range(n)]
    (n,) = r.take("=I")
    p.matrix = [r.take("=IQQ") for _ in range(n)]
    (n,) = r.take("=I")
    for _ in range(n):
        cid, kind = r.take("=HB")
        p.counter_names[cid] = (r.str(), "last" if kind == 1 else "sum")
    (n,) = r.take("=I")
    p.counters = [r.take("=IHdQQ") for _ in range(n)]
    p.intervals, p.intervals_dropped = r.take("=QQ")
    (end,) = r.take("=8s")
    if end != b"MLEND\0\0\0":
        raise PayloadError("missing end marker")
    return p
