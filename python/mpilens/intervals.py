"""Read the compute intervals recorded with MPILENS_INTERVALS (ranks/intervals-NNNNNN.bin): per
rank, the time between consecutive synchronizing collectives on communicators of all ranks, and
the time inside each. Layout: runtime/spec/rundir.yaml, file `intervals`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _layout as L
from . import layout
from .errors import RunDirectoryError


@dataclass
class Intervals:
    """compute[r, k]: rank r's time before the k-th synchronizing collective; collective[r, k]: its
    time inside it. Only the intervals every rank recorded are kept (the common prefix)."""

    compute: np.ndarray
    collective: np.ndarray
    dropped: int

    @property
    def maxima(self) -> np.ndarray:
        """Per-interval maximum of compute over ranks: the length of each bulk-synchronous step."""
        return self.compute.max(axis=0)


def read_file(path: Path) -> tuple[int, np.ndarray, int]:
    """Return (rank, pairs[k, 2], dropped) of one intervals file."""
    data = layout.read_regular(path)  # a regular file only: a FIFO or a device would hang or never end
    head = L.INTERVALS_HEADER
    if len(data) < head.size or data[:8] != L.MAGIC_INTERVALS:
        raise RunDirectoryError(f"{path.name} is not an mpilens intervals file")
    _, rank, _, count, dropped = head.unpack_from(data)
    if len(data) < head.size + L.INTERVAL.size * count:
        raise RunDirectoryError(f"{path.name} is truncated: {len(data)} bytes for {count} intervals")
    rec = np.frombuffer(data, dtype=L.INTERVAL_DTYPE, count=count, offset=head.size)
    pairs = np.stack([rec["compute_s"], rec["collective_s"]], axis=1)
    return int(rank), pairs, int(dropped)


def load(rundir: str | Path) -> Intervals:
    """Load the intervals of every rank of a run; raise RunDirectoryError when there are none."""
    files = layout.intervals_files(rundir)
    if not files:
        raise RunDirectoryError(f"{rundir}: no intervals recorded (run with --set MPILENS_INTERVALS=1)")
    per_rank = {}
    dropped = 0
    for f in files:
        rank, pairs, d = read_file(f)
        per_rank[rank] = pairs
        dropped += d
    ranks = sorted(per_rank)
    if ranks != list(range(len(ranks))):
        raise RunDirectoryError(f"{rundir}: intervals files of ranks {ranks} (some ranks missing)")
    n = min(len(p) for p in per_rank.values())
    compute = np.stack([per_rank[r][:n, 0] for r in ranks])
    collective = np.stack([per_rank[r][:n, 1] for r in ranks])
    return Intervals(compute, collective, dropped)
