"""Exporters: a run written for other tools, one module per format in this package.

A module registers its format with ``exporter(Exporter(...))``: the format's name (the FORMAT of
``mpilens export FORMAT RUN [-o OUT]``), a one-line help, what it is written from (``"trace"``: the
run's mpilens.trace.timeline.Timeline; ``"profile"``: the run as a mpilens.Run), the suffix of the
default output name, and the function writing it, ``write(data, out, progress, **options)``, which
returns counts of what it wrote. Options of its own (argparse flags) go in ``options``. Modules
are found automatically; adding a format touches no other exporter and no command.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MpilensError

Progress = Callable[[str], None] | None


@dataclass(frozen=True)
class Option:
    """A command-line option of one exporter: argparse's flags and keywords (with a dest)."""

    flags: tuple[str, ...]
    kwargs: dict[str, Any]

    @property
    def dest(self) -> str:
        """The name the option's value is passed to write() under."""
        return self.kwargs["dest"]


@dataclass(frozen=True)
class Exporter:
    """One export format."""

    name: str                             # FORMAT of `mpilens export FORMAT RUN`
    help: str                             # one line for `mpilens export --help`
    source: str                           # "trace" (a Timeline) or "profile" (a Run)
    suffix: str                           # default output: <run directory name><suffix>, in the current directory
    write: Callable[..., dict[str, int]]  # write(data, out, progress, **options) -> counts written
    directory: bool = False               # the output is a new directory (an existing one is refused)
    options: tuple[Option, ...] = field(default_factory=tuple)
    describe: Callable[[Path, dict[str, int], dict[str, Any]], str] | None = None  # line printed after writing
    # write_run(run directory, out, progress, **options): the same output of a whole trace, streamed
    # from the run directory rank by rank (what `mpilens export` uses)
    write_run: Callable[..., dict[str, int]] | None = None
    # write_run also takes selection= (the command's --ranks, --window, --functions, --exclude)
    streams_selection: bool = False

    def default_output(self, run_dir: Path) -> Path:
        """Where the export goes without -o: <run directory name><suffix> in the current directory."""
        return Path(Path(run_dir).resolve().name + self.suffix)

    def check_output(self, out: Path) -> None:
        """Refuse an output that exists when the format writes a new directory (MpilensError)."""
        if self.directory and out.exists():
            raise MpilensError(f"{out} already exists; {self.name} output is written into a new directory")

    def message(self, out: Path, written: dict[str, int], options: dict[str, Any]) -> str:
        """The line telling what was written."""
        if self.describe is not None:
            return self.describe(out, written, options)
        return f"Wrote {out} ({self.name}): " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in written.items())


_REGISTRY: dict[str, Exporter] = {}


def exporter(e: Exporter) -> Exporter:
    """Register an export format (called by its module at import)."""
    _REGISTRY[e.name] = e
    return e


def all_exporters() -> list[Exporter]:
    """Every registered format, by name."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return sorted(_REGISTRY.values(), key=lambda e: e.name)


def names(source: str | None = None) -> list[str]:
    """Names of the registered formats (those written from `source` only, when given)."""
    return [e.name for e in all_exporters() if source is None or e.source == source]


def get(name: str) -> Exporter:
    """The format registered under `name`; KeyError when there is none."""
    all_exporters()
    return _REGISTRY[name]
