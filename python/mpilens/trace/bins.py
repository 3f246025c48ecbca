"""The timeline's overview per time bin: what share of each bin each row (a rank, or a thread of
it) spent in calls of each class, for a trace too large to draw call by call (the HTML report's
timeline section; the out-of-core analysis gives it rank by rank, mpilens.trace.scan)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

# time bins; fewer when there are many rows, so that the page stays a few MB whatever the trace's
# size (rows x classes x bins bytes)
BINS = 1_000
MAX_BIN_BYTES = 4_000_000


def bins_for(nrows: int, nclasses: int) -> int:
    """The time bins of the overview: fewer when there are many rows (rows x classes x bins bytes)."""
    return max(16, min(BINS, MAX_BIN_BYTES // max(nrows * nclasses, 1)))


def bin_shares(row: np.ndarray, cls: np.ndarray, t0: np.ndarray, t1: np.ndarray, nrows: int, nclasses: int,
               end: float, n: int | None = None) -> dict[str, Any]:
    """The share of each time bin that each row spent in calls of each class: {"n": bins, "width": s,
    "shares": per row, base64 of uint8 [class][bin] (255: the whole bin)}. A call's time is split
    exactly among the bins it overlaps. n: the bins (bins_for; given when these rows are some of
    the chart's, as the out-of-core analysis gives each rank's, mpilens.trace.scan)."""
    n = n or bins_for(nrows, nclasses)
    width = (end or 1.0) / n
    cover = np.zeros((nrows, nclasses, n + 1))
    a, b = np.clip(t0 / width, 0, n), np.clip(np.maximum(t1, t0) / width, 0, n)  # in bins
    first, last = np.minimum(a.astype(np.int64), n - 1), np.minimum(b.astype(np.int64), n - 1)
    one = first == last
    np.add.at(cover, (row[one], cls[one], first[one]), b[one] - a[one])
    many = ~one
    r, c, f, la = row[many], cls[many], first[many], last[many]
    np.add.at(cover, (r, c, f), f + 1 - a[many])  # the first bin's part, the last bin's part
    np.add.at(cover, (r, c, la), b[many] - la)
    # whole bins in between: +1 from the bin after the first, -1 from the last, summed along time
    full = np.zeros_like(cover)
    np.add.at(full, (r, c, f + 1), 1.0)
    np.add.at(full, (r, c, la), -1.0)
    cover += np.cumsum(full, axis=2)
    share = np.rint(np.clip(cover[:, :, :n], 0, 1) * 255).astype(np.uint8)
    return {"n": n, "width": width, "shares": [base64.b64encode(share[i].tobytes()).decode() for i in range(nrows)]}
