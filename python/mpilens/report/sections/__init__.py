"""Sections of the HTML report (and their static figures).

A section is a class with an id, a title, an order on the page, and two methods:
html(ctx) returns its HTML (None when it has nothing to show) and may put chart data into
ctx.data; figures(ctx) returns the matplotlib figures it offers for `--png`. What a section
loads or computes from the run goes through ctx.once(key, fn), so that html(), figures() and the
command line (one cache for the text, HTML and PNG reports) compute it once. To add a section for
a new analysis, add one module to this package with a class decorated by @section: it is found
automatically and touches no other section.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

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
    order = 100

    def html(self, ctx: Context) -> str | None:
        """Return the section's HTML body, or None to leave it out."""
        raise NotImplementedError

    def figures(self, ctx: Context) -> list[Figure]:
        """Return the section's static figures (none by default)."""
        return []


_REGISTRY: list[type[Section]] = []


def section(cls: type[Section]) -> type[Section]:
    """Register a section class."""
    _REGISTRY.append(cls)
    return cls


def all_sections() -> list[Section]:
    """Return one instance of every section, in page order."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return [cls() for cls in sorted(_REGISTRY, key=lambda c: (c.order, c.id))]
