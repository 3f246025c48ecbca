"""`mpilens export FORMAT RUN [-o OUT]`: write a run for other tools, in any format of mpilens.exports
(chrome, parquet, otf2: the trace; hatchet, caliper: the profile). `mpilens trace RUN --format F -o OUT`
writes the trace formats too."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..cli import command
from ..errors import MpilensError
from ..trace.filters import SELECTION


def _setup(p: argparse.ArgumentParser) -> None:
    from .. import exports

    formats = exports.all_exporters()
    p.add_argument("target", metavar="FORMAT", choices=[e.name for e in formats],
                   help="; ".join(f"{e.name}: {e.help}" for e in formats))
    p.add_argument("rundir", type=Path)
    p.add_argument("-o", "--output", type=Path,
                   help="file (or OTF2 directory) to write; default: the run directory's name with "
                        + ", ".join(f"{e.suffix} ({e.name})" for e in formats) + " in the current directory")
    seen: set[str] = set()
    for e in formats:
        for opt in e.options:
            if opt.dest not in seen:
                seen.add(opt.dest)
                p.add_argument(*opt.flags, **opt.kwargs)
    add_selection(p)
    p.add_argument("--json", action="store_true", help="print what was written as one JSON document")
    p.add_argument("--quiet", action="store_true", help="no progress display")




def add_selection(p: argparse.ArgumentParser) -> None:
    """The options choosing a part of a trace to export (docs/trace.md, "Trace only what is wanted")."""
    g = p.add_argument_group("part of the trace (trace formats)")
    g.add_argument("--ranks", metavar="LIST", help="only these ranks, as ranks and ranges (0-3,8,12-15)")
    g.add_argument("--window", metavar="START:END",
                   help="only the events starting in this window, in seconds of the trace's time axis (as the "
                        "report's timeline and the exports show it): 2:5, 2: or :5")
    g.add_argument("--functions", metavar="LIST",
                   help="of the MPI calls, only those of these functions and classes (MPI_Send,collective); "
                        "regions and counters stay")
    g.add_argument("--exclude", metavar="LIST", help="leave out the calls of these functions and classes (MPI_Test,probe)")


def select(tl: Any, selection: dict[str, str | None]) -> Any:
    """The part of a Timeline that the selection options ask for (the timeline itself without any)."""
    from ..trace import filters

    parsed = filters.parse_selection(selection, tl.functions, tl.classes, tl.traced)
    return tl if parsed is None else tl.select(**parsed)


def export(name: str, rundir: Path, out: Path, options: dict[str, Any], step: Any = None,
           selection: dict[str, str | None] | None = None) -> dict[str, int]:
    """Write run directory `rundir` in format `name` into `out`; return the counts written. The
    run is read through its family's reader: the trace for trace formats, the profile otherwise.

    Raises:
        MpilensError: the output cannot be written, or an OTF2 directory exists already.
    """
    from .. import exports
    from .. import rundir as rd

    e = exports.get(name)
    e.check_output(out)
    chosen = any((selection or {}).get(k) for k in SELECTION)
    if e.source == "trace" and e.write_run is not None and (not chosen or e.streams_selection):
        try:  # streamed rank by rank, never all in memory
            return e.write_run(rundir, out, step, **options, **({"selection": selection} if chosen else {}))
        except OSError as err:
            raise MpilensError(f"cannot write {out}: {err.strerror}") from err
    if e.source == "trace":
        from ..trace import timeline

        data: Any = select(timeline.load(rundir, step), selection or {})
    elif any((selection or {}).get(k) for k in SELECTION):
        raise MpilensError(f"--{next(k for k in SELECTION if (selection or {}).get(k))} chooses a part of a trace; "
                           f"{name} is written from the profile")
    else:
        data = rd.load(rundir)
        for problem in data.problems:
            print(f"mpilens: note: {problem}", file=sys.stderr)
    try:
        return e.write(data, out, step, **options)
    except OSError as err:
        raise MpilensError(f"cannot write {out}: {err.strerror}") from err


@command("export", "write a run for other tools: chrome, parquet, otf2 (the trace), hatchet, caliper (the profile)", _setup)
def cmd_export(a: argparse.Namespace) -> int:
    """`mpilens export FORMAT RUN [-o OUT]`: write the run in one of the formats of mpilens.exports."""
    from .. import exports
    from ..progress import Steps

    e = exports.get(a.target)
    out = a.output if a.output is not None else e.default_output(a.rundir)
    options = {o.dest: getattr(a, o.dest) for o in e.options}
    with Steps(2 if e.source == "trace" else 1, quiet=a.quiet or e.source != "trace") as step:
        written = export(e.name, a.rundir, out, options, step, {k: getattr(a, k) for k in SELECTION})
    if a.json:
        json.dump({"run": str(a.rundir), "format": e.name, "output": str(out), "written": written}, sys.stdout,
                  indent=2)
        print()
    else:
        print(e.message(out, written, options))
    return 0
