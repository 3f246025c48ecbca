"""Read the compute intervals recorded with MPILENS_INTERVALS (ranks/intervals-NNNNNN.bin): per
rank, the time between consecutive synchronizing collectives on communicators of all ranks, and
the time inside each. Layout: runtime/spec/rundir.yaml, file `intervals`. A rank killed before it
could write its file (SIGKILL, the OOM killer) has its intervals up to its last synchronizing
collective in its statistics file (python/mpilens/recover.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _layout as L
from . import layout, recover
from .errors import RunDirectoryError


@dataclass
class Intervals:
    """compute[r, k]: rank r's time before the k-th synchronizing collective; collective[r, k]: its
    time inside it. Only the intervals every rank recorded are kept (the common prefix)."""

    compute: np.ndarray
    collective: np.ndarray
    dropped: int
    problems: list[str] = field(default_factory=list)  # ranks recovered from their statistics files, and why

    @property
    def maxima(self) -> np.ndarray:
        """Per-interval maximum of compute over ranks: the length of each bulk-synchronous step."""
        return self.compute.max(axis=0)


def read_file(path: layout.RankFile | recover.Virtual) -> tuple[int, np.ndarray, int]:
    """Return (rank, pairs[k, 2], dropped) of one intervals file."""
    # a regular file only: a FIFO or a device would hang or never end; a rank recovered from its
    # statistics file comes as its bytes (recover.Virtual)
    data = path.read_bytes() if isinstance(path, recover.Virtual) else layout.read_regular(path)
    head = L.INTERVALS_HEADER
    if len(data) < head.size or data[:8] != L.MAGIC_INTERVALS:
        raise RunDirectoryError(f"{path.name} is not an mpilens intervals file")
    _, rank, _, count, dropped = head.unpack_from(data)
    if len(data) < head.size + L.INTERVAL.size * count:
        raise RunDirectoryError(f"{path.name} is truncated: {len(data)} bytes for {count} intervals")
    rec = np.frombuffer(data, dtype=L.INTERVAL_DTYPE, count=count, offset=head.size)
    pairs = np.stack([rec["compute_s"], rec["collective_s"]], axis=1)
    return int(rank), pairs, int(dropped)


def sources(rundir: str | Path, problems: list[str]) -> list[layout.RankFile | recover.Virtual]:
    """Each rank's intervals: its file, else what its statistics file holds (a file that cannot be
    used is named in problems)."""
    files = layout.intervals_files(rundir)
    have = {layout.rank_of("intervals", f) for f in files}
    return [*files, *recover.recover_intervals(rundir, {r for r in have if r is not None}, problems)]


def load(rundir: str | Path) -> Intervals:
    """Load the intervals of every rank of a run; raise RunDirectoryError when there are none."""
    problems: list[str] = []
    files = sources(rundir, problems)
    if not files:
        raise RunDirectoryError(f"{rundir}: no intervals recorded (run with --set MPILENS_INTERVALS=1)")
    per_rank = {}
    dropped = 0
    for f in files:
        rank, pairs, d = read_file(f)
        per_rank[rank] = pairs
        dropped += d
        if isinstance(f, recover.Virtual):
            problems.append(f"rank {rank}: {len(pairs)} intervals recovered from {f.name} (it ended without "
                            "writing its intervals file): up to its last synchronizing collective")
            if f.given_up_s is not None:
                problems.append(f"rank {rank}: the file system could not hold its intervals after "
                                f"{f.given_up_s:.3g} s; later ones were in memory only and are lost")
    ranks = sorted(per_rank)
    if ranks != list(range(len(ranks))):
        raise RunDirectoryError(f"{rundir}: intervals files of ranks {ranks} (some ranks missing)")
    n = min(len(p) for p in per_rank.values())
    compute = np.stack([per_rank[r][:n, 0] for r in ranks])
    collective = np.stack([per_rank[r][:n, 1] for r in ranks])
    return Intervals(compute, collective, dropped, problems)
