"""What the trace exporters share: the region visits of a timeline."""

from __future__ import annotations

import numpy as np

from ..trace import reader
from ..trace.timeline import Timeline


def region_visits(tl: Timeline) -> list[tuple[int, int, float, float, str]]:
    """Region visits as (rank, thread, start, end, name), from begin/end records."""
    ev = tl.ev
    out, stacks = [], {}
    for i in np.flatnonzero((ev["kind"] == reader.REGION_BEGIN) | (ev["kind"] == reader.REGION_END)):
        key = (int(ev["rank"][i]), int(ev["thread"][i]))
        if ev["kind"][i] == reader.REGION_BEGIN:
            stacks.setdefault(key, []).append((int(ev["fn"][i]), float(ev["t0"][i])))
        elif stacks.get(key):
            path, t0 = stacks[key].pop()
            out.append((key[0], key[1], t0, float(ev["t0"][i]), tl.region_name(key[0], path)))
    return out
