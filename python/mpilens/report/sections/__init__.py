"""Sections of the reports of `mpilens report`: the text report, the `--json` document, the HTML
page and its static figures are all assembled from the one list of sections here.

A section is a class with an id, a title, an order, and a method per form it takes (each returns
None, the default, to leave the section out of that form):

- html(ctx): its HTML, placed by `order` on the page; it may put chart data into ctx.data;
- text(ctx): its lines of the text report (the first one its "@ Title" heading), placed by
  `text_order` (default: `order`); sections are separated by an empty line;
- json(ctx): the keys it adds to the `--json` document, placed by `json_order` (default: `order`);
- figures(ctx): the matplotlib figures it offers for `--png` (none by default).

What a section loads or computes from the run goes through ctx.once(key, fn), so that every form
and the command line (one cache for all of them) compute it once. To add a section for a new
analysis, add one module to this package with a class decorated by @section: it is found
automatically and touches no other section.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from html import escape
from typing import Any, TypeVar

from ... import units
from ...findings import Finding
from ...rundir import Run
from ...summary import Summary

T = TypeVar("T")


@dataclass
class Context:
    """What every section may use."""

    run: Run
    summary: Summary
    findings: list[Finding]
    data: dict[str, Any] = field(default_factory=dict)  # JSON handed to the page's charts
    cache: dict[str, Any] = field(default_factory=dict)  # what sections compute once and share

    def once(self, key: str, fn: Callable[[], T]) -> T:
        """fn(), computed once per report under `key` and shared by every section, html() and
        figures() alike (and by the reports built from the same cache). An exception is not cached."""
        if key not in self.cache:
            self.cache[key] = fn()
        return self.cache[key]


@dataclass
class Figure:
    """A static figure: file name (without .png) and a function drawing it on a matplotlib Figure."""

    name: str
    draw: Callable[[Any], None]


class Section:
    """Base class of report sections."""

    id = ""
    title = ""
    order = 100                    # place on the HTML page
    text_order: int | None = None  # place in the text report (None: order)
    json_order: int | None = None  # place of its keys in the JSON document (None: order)

    def html(self, ctx: Context) -> str | None:
        """Return the section's HTML body, or None to leave it out."""
        return None

    def text(self, ctx: Context) -> list[str] | None:
        """Return the section's lines of the text report, or None to leave it out."""
        return None

    def json(self, ctx: Context) -> dict[str, Any] | None:
        """Return the keys the section adds to the JSON report, or None to add none."""
        return None

    def figures(self, ctx: Context) -> list[Figure]:
        """Return the section's static figures (none by default)."""
        return []


_REGISTRY: list[type[Section]] = []


def section(cls: type[Section]) -> type[Section]:
    """Register a section class."""
    _REGISTRY.append(cls)
    return cls


def all_sections(form: str = "html") -> list[Section]:
    """Return one instance of every section, in the order of `form`: "html" (the page, and the
    figures), "text" or "json"."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")

    def place(c: type[Section]) -> int:
        own = {"text": c.text_order, "json": c.json_order}.get(form)
        return c.order if own is None else own
    return [cls() for cls in sorted(_REGISTRY, key=lambda c: (place(c), c.order, c.id))]


CELL_MAX = 60  # characters of a text table's cell; longer names keep their start and end (full in JSON and HTML)
_CONTROL = ({c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]} | {0x0A: "\\n", 0x09: "\\t", 0x0D: "\\r"}
            | {0xDC80 + b: f"\\x{b + 0x80:02x}" for b in range(0x80)})  # and bytes that were not UTF-8 (units.printable)


def cell_text(value: Any, limit: int = CELL_MAX) -> str:
    """A value as a text table shows it: on one line, control characters and bytes that were not
    UTF-8 escaped (a name may hold a newline, a terminal's escape sequence, Latin-1), at most limit
    characters (the middle elided)."""
    text = str(value).translate(_CONTROL)
    if len(text) > limit:
        keep = (limit - 1) // 2
        text = text[:keep] + "…" + text[len(text) - (limit - 1 - keep):]
    return text


HTML_NAME_MAX = 120  # characters of a name in the HTML report; longer ones keep their start and end


def name_html(value: Any, limit: int = HTML_NAME_MAX) -> str:
    """A name as the HTML report shows it: escaped, control characters and bytes that were not
    UTF-8 shown as escapes (units.printable), at most limit characters (the middle elided) with the
    whole name in its tooltip: a 64 KiB region name neither pads every row nor hides the table."""
    full = units.printable(str(value), controls=True)
    if len(full) <= limit:
        return escape(full)
    keep = (limit - 1) // 2
    return f'<span title="{escape(full)}">{escape(full[:keep] + "…" + full[len(full) - (limit - 1 - keep):])}</span>'


def text_table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    """Lines of a text table: a header, a rule, the rows; columns in `right` (default: all but the
    first) are right-aligned. Cells are shown with cell_text."""
    right = right if right is not None else set(range(1, len(headers)))
    rows = [[cell_text(c) for c in r] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)] if rows else [len(h) for h in headers]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def sortable_td(v: Any, text: str, cls: str = "") -> str:
    """A table cell showing text and sorting by v (the report's sortable tables)."""
    c = f' class="{cls}"' if cls else ""
    return f'<td{c} data-v="{"" if v is None else escape(str(v))}">{escape(text)}</td>'


def legend(items: Iterable[tuple[str, str]]) -> str:
    """Legend entries of a chart: a colour swatch and its label for each (label, colour)."""
    return "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>' for n, c in items)
