"""The HTML report's timeline at any size (docs/trace.md, "The timeline in the HTML report"): beyond
report.sections.timeline.MAX_BARS calls, each row's calls are summed per time bin and class, so that
the page stays a few MB whatever the trace's size. Expectations from the calls given (synthetic
timelines whose every call is known), not from the code under test."""

from __future__ import annotations

import base64
import json

import numpy as np

from mpilens.report.sections import timeline as section
from mpilens.trace import reader
from mpilens.trace.timeline import COLUMNS, Events, Timeline


def shares(data: dict, row: int, nclasses: int) -> np.ndarray:
    """A row's [class][bin] shares as fractions of the bin."""
    raw = np.frombuffer(base64.b64decode(data["shares"][row]), dtype=np.uint8)
    return raw.reshape(nclasses, data["n"]) / 255


def test_a_call_is_split_exactly_among_its_bins():
    """Bins of 0.1 s (1000 over 100 s): a call from 0.15 to 0.35 s covers half of bin 1, bin 2 and half
    of bin 3; one from 0.51 to 0.53 s a fifth of bin 5; a second class apart; a second row apart."""
    got = section.bin_shares(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 0]), np.array([0.15, 0.51, 0.7, 99.95]),
                             np.array([0.35, 0.53, 0.75, 100.0]), nrows=2, nclasses=2, end=100.0)
    assert got["n"] == 1000 and abs(got["width"] - 0.1) < 1e-12
    s = shares(got, 0, 2)
    expect = np.zeros((2, 1000))
    expect[0, 1:4] = [0.5, 1.0, 0.5]
    expect[0, 5] = 0.2
    expect[1, 7] = 0.5
    assert np.abs(s - expect).max() <= 0.5 / 255 + 1e-9
    last = shares(got, 1, 2)
    assert abs(last[0, 999] - 0.5) <= 0.5 / 255 and last.sum() - last[0, 999] == 0


def synthetic(nranks: int, calls_per_rank: int, seed: int = 1) -> tuple[Timeline, np.ndarray]:
    """Ranks making calls of random lengths one after another (MPI_Allreduce and MPI_Wait, every
    other call), with gaps; and each rank's total time in calls."""
    rng = np.random.default_rng(seed)
    n = nranks * calls_per_rank
    dur = rng.exponential(2e-6, n)
    gap = rng.exponential(3e-6, n)
    t0 = np.empty(n)
    for r in range(nranks):
        sl = slice(r * calls_per_rank, (r + 1) * calls_per_rank)
        t0[sl] = np.cumsum(gap[sl] + dur[sl]) - dur[sl]
    cols = {k: np.zeros(n, dtype=t) for k, t in COLUMNS.items()}
    cols["rank"][:] = np.repeat(np.arange(nranks), calls_per_rank)
    cols["kind"][:] = reader.CALL
    cols["fn"][:] = np.arange(n) % 2
    cols["t0"][:], cols["t1"][:] = t0, t0 + dur
    cols["dst"][:] = cols["src"][:] = -1
    tl = Timeline(nranks, ["MPI_Allreduce", "MPI_Wait"], ["collective", "completion"], Events(cols), {}, {}, True)
    return tl, np.bincount(cols["rank"], weights=dur, minlength=nranks)


def test_a_large_trace_makes_a_small_page():
    """64 ranks of 40,000 calls (2.56 M): the chart's data stays under 5 MB, the bars are the longest
    calls, and each rank's time in calls, summed from its bins, is its calls' total."""
    tl, busy = synthetic(64, 40_000)
    data = section.chart_data(tl)
    assert data["bins"] is not None and len(data["bars"]) == section.MAX_BARS
    size = len(json.dumps(data))
    assert size < 5e6, size
    classes = data["classes"]
    for r in range(64):
        s = shares(data["bins"], r, len(classes)).sum() * data["bins"]["width"]
        assert abs(s - busy[r]) < 0.01 * busy[r] + data["bins"]["n"] * data["bins"]["width"] / 510, (r, s, busy[r])
    # the bars: the MAX_BARS longest calls
    lengths = np.sort([b[2] - b[1] for b in data["bars"]])
    every = np.sort(tl.ev["t1"] - tl.ev["t0"])[::-1][:section.MAX_BARS]
    assert abs(lengths.min() - every.min()) < 1e-9


def test_a_small_trace_draws_every_call():
    tl, _ = synthetic(2, 100)
    data = section.chart_data(tl)
    assert data["bins"] is None and len(data["bars"]) == 200
