"""Toy export (example): the MPI functions of a run as CSV (`mpilens export toy`)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ..rundir import Run
from . import Exporter, Option, exporter


def toy(run: Run, out: Path, progress: Any = None, delimiter: str = ",") -> dict[str, int]:
    """Write one row per MPI function: name, calls and time summed over ranks."""
    rows = 0
    with out.open("w", newline="") as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(["function", "calls", "time_s"])
        for name, d in run.profile["functions"].items():
            w.writerow([name, sum(c or 0 for c in d["calls"]), sum(t or 0.0 for t in d["time_s"])])
            rows += 1
    return {"functions": rows}


exporter(Exporter("toy", "the MPI functions as CSV (calls and time summed over ranks)", "profile", ".csv", toy,
                  options=(Option(("--delimiter",), {"dest": "delimiter", "default": ",",
                                                     "help": "toy: the CSV delimiter (default ,)"}),)))
