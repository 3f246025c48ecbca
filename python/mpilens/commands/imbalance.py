"""`mpilens imbalance RUN`: load imbalance per scope, related to user work counters, with the
efficiency-adjusted variant (seeds/000, chapter 4)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import command


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--work", action="append", metavar="COUNTER",
                   help="work counter to correlate with time (repeatable; default: every summed user counter)")
    p.add_argument("--efficiency", default="efficiency", metavar="COUNTER",
                   help="counter holding each rank's efficiency in [0, 1] (default: efficiency)")
    p.add_argument("--no-efficiency", action="store_true", help="no efficiency-adjusted figures")
    p.add_argument("--json", action="store_true", help="print the analysis as one JSON document")


@command("imbalance", "load imbalance per region and MPI function, related to the work each rank reports", _setup)
def cmd_imbalance(a: argparse.Namespace) -> int:
    """`mpilens imbalance`: print the load imbalance per region and MPI function (text or JSON)."""
    from .. import imbalance, rundir

    run = rundir.load(a.rundir)
    result = imbalance.analyze(run, work=a.work, efficiency=None if a.no_efficiency else a.efficiency)
    if run.problems or not run.complete:
        result.notes.insert(0, "; ".join(run.problems) or "incomplete run")
    if a.json:
        json.dump({**result.to_dict(), "complete": run.complete, "problems": run.problems}, sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write(imbalance.render_text(result))
    return 0
