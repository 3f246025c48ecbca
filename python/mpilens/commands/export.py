"""`mpilens export hatchet RUN -o FILE`: write a run for Hatchet (LLNL) to read."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli import command
from ..errors import MpilensError

TARGETS = ("hatchet",)


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", choices=TARGETS, help="hatchet: a GraphFrame file (regions -> MPI functions, per rank)")
    p.add_argument("rundir", type=Path)
    p.add_argument("-o", "--output", type=Path, required=True, help="file to write (.json)")
    p.add_argument("--format", choices=["json", "literal"], default="json",
                   help="json: Hatchet's GraphFrame serialization, all ranks (GraphFrame.from_json); literal: "
                        "Hatchet's literal format, mean over ranks (GraphFrame.from_literal); default json")


@command("export", "write a run for other tools: hatchet (GraphFrame for Hatchet/Thicket)", _setup)
def cmd_export(a: argparse.Namespace) -> int:
    from .. import export_hatchet, rundir

    run = rundir.load(a.rundir)
    for problem in run.problems:
        print(f"mpilens: note: {problem}", file=sys.stderr)
    try:
        written = export_hatchet.write(run, a.output, a.format)
    except OSError as err:
        raise MpilensError(f"cannot write {a.output}: {err.strerror}") from err
    reader = "GraphFrame.from_json(open(FILE).read())" if a.format == "json" else \
        "GraphFrame.from_literal(json.load(open(FILE)))"
    print(f"Wrote {a.output}: {written['nodes']} nodes, {written['rows']} rows; read it with hatchet's {reader}")
    return 0
