"""What a trace leaves out, and what an export selects: the syntax of ranks (``0-3,8``), time windows
(``START:END`` in seconds) and function lists (names and classes), as MPILENS_TRACE_RANKS,
MPILENS_TRACE_WINDOW and MPILENS_TRACE_EXCLUDE take them at record time (the runtime parses them
too: runtime/src/modes/trace/trace_filter.c) and ``mpilens export --ranks/--window/--functions/--exclude`` at
export time; and the description of a recorded trace's filters (RecordFilters)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..errors import MpilensError

CLASSES = ("p2p", "collective", "rma", "completion", "probe", "io", "setup", "other")

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse_ranks(text: str, what: str = "ranks") -> list[tuple[int, int]]:
    """'0-3,8' -> [(0, 3), (8, 8)]; MpilensError for anything else (an empty text: [])."""
    if not text.strip():
        return []
    out = []
    for item in text.split(","):
        m = _RANGE.match(item.strip())
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise MpilensError(f"{what}={text}: not a list of ranks and ranges (e.g. 0-3,8,12-15)")
        a = int(m.group(1))
        out.append((a, int(m.group(2)) if m.group(2) is not None else a))
    return out


def in_ranks(ranges: list[tuple[int, int]], rank: int) -> bool:
    """Whether a rank is in a parsed list (an empty list holds every rank)."""
    return not ranges or any(a <= rank <= b for a, b in ranges)


def parse_window(text: str, what: str = "window") -> tuple[float, float]:
    """'5:20' -> (5.0, 20.0); '5:' -> (5.0, inf); ':20' -> (0.0, 20.0); MpilensError otherwise."""
    parts = text.split(":")
    try:
        if len(parts) != 2 or parts == ["", ""]:
            raise ValueError
        lo = float(parts[0]) if parts[0].strip() else 0.0
        hi = float(parts[1]) if parts[1].strip() else math.inf
        if not (math.isfinite(lo) and lo >= 0 and hi > lo) or math.isnan(hi):
            raise ValueError
    except ValueError:
        raise MpilensError(f"{what}={text}: not START:END in seconds, END after START (e.g. 5:20, 5: or :20)") from None
    return lo, hi


def function_ids(text: str, functions: list[str], classes: list[str], what: str = "functions") -> set[int]:
    """The ids of the functions a list names ('MPI_Test,probe': functions by name, case ignored,
    and every function of a class); MpilensError naming an item that is neither."""
    by_name = {f.lower(): i for i, f in enumerate(functions)}
    out: set[int] = set()
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        if item.lower() in CLASSES:
            out |= {i for i, c in enumerate(classes) if c == item.lower()}
        elif item.lower() in by_name:
            out.add(by_name[item.lower()])
        else:
            raise MpilensError(f"{what}={text}: '{item}' is neither an MPI function of this trace nor a class of "
                               f"functions ({', '.join(CLASSES)})")
    return out


@dataclass
class RecordFilters:
    """What the runtime was told to leave out of a trace (meta.json's configuration, the heads'
    windows): None or empty where nothing was left out."""

    ranks: str = ""                # MPILENS_TRACE_RANKS as given ("" every rank)
    window: tuple[float, float] | None = None  # on the timeline's axis (s), end inf when open
    window_setting: str = ""       # MPILENS_TRACE_WINDOW as given
    pcontrol: bool = False         # MPILENS_TRACE_PCONTROL: phases between MPI_Pcontrol(1) and (0)
    exclude: str = ""              # MPILENS_TRACE_EXCLUDE as given

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> RecordFilters:
        """From meta.json's "config" (a run without these settings: nothing left out)."""
        def text(name: str) -> str:
            v = config.get(name)
            return v.strip() if isinstance(v, str) else ""
        return cls(ranks=text("MPILENS_TRACE_RANKS"), window_setting=text("MPILENS_TRACE_WINDOW"),
                   pcontrol=text("MPILENS_TRACE_PCONTROL").lower() in ("1", "true", "yes", "on"),
                   exclude=text("MPILENS_TRACE_EXCLUDE"))

    @property
    def cut(self) -> bool:
        """Whether events were left out by time (a window, or MPI_Pcontrol phases)."""
        return bool(self.window_setting) or self.pcontrol

    def any(self) -> bool:
        """Whether the runtime was told to leave anything out."""
        return bool(self.ranks or self.window_setting or self.pcontrol or self.exclude)

    def traced(self, rank: int) -> bool:
        """Whether MPILENS_TRACE_RANKS let a rank write its trace."""
        try:
            return in_ranks(parse_ranks(self.ranks), rank)
        except MpilensError:
            return True

    def describe(self) -> list[str]:
        """One phrase per filter, for reports ("ranks 0-3 only", ...)."""
        out = []
        if self.ranks:
            out.append(f"ranks {self.ranks} only (MPILENS_TRACE_RANKS)")
        if self.window_setting:
            out.append(f"events starting in {self.window_setting} s only (MPILENS_TRACE_WINDOW)")
        if self.pcontrol:
            out.append("events between MPI_Pcontrol(1) and MPI_Pcontrol(0) only (MPILENS_TRACE_PCONTROL)")
        if self.exclude:
            out.append(f"without the calls of {self.exclude} (MPILENS_TRACE_EXCLUDE)")
        return out


SELECTION = ("ranks", "window", "functions", "exclude")


def _ranges(ranks: list[int]) -> str:
    parts, start = [], None
    for i, r in enumerate(ranks):
        start = r if start is None else start
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            parts.append(str(start) if start == r else f"{start}-{r}")
            start = None
    return ",".join(parts) or "none"


def parse_selection(selection: dict[str, str | None], functions: list[str], classes: list[str],
                    traced: list[int]) -> dict[str, Any] | None:
    """The part of a trace an export asks for (`--ranks`, `--window`, `--functions`, `--exclude`,
    as given), as Timeline.select takes it; None when it asks for none. MpilensError for a
    selection the trace cannot give (a bad list, ranks it does not have)."""
    if not any(selection.get(k) for k in SELECTION):
        return None
    ranks = parse_ranks(selection["ranks"], "--ranks") if selection.get("ranks") else None
    window = parse_window(selection["window"], "--window") if selection.get("window") else None
    wanted = function_ids(selection["functions"], functions, classes, "--functions") if selection.get("functions") \
        else None
    exclude = function_ids(selection["exclude"], functions, classes, "--exclude") if selection.get("exclude") \
        else None
    if ranks and not any(a <= r <= b for a, b in ranks for r in traced):
        raise MpilensError(f"--ranks={selection['ranks']}: the trace has none of these ranks (it has "
                           f"{_ranges(traced)})")
    return {"ranks": ranks, "window": window, "functions": wanted, "exclude": exclude}
