"""`mpilens io RUN`: MPI-IO per file (names as opened, bytes, calls by kind, sizes, offsets, times,
the slowest rank, the file system), from io/rank-NNNNNN.bin."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import command


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--json", action="store_true",
                   help='print {"files": [{"name", "bytes_read", "bytes_written", ...}, ...]} as one JSON document')


@command("io", "MPI-IO per file: bytes, calls, access sizes and offsets, times, slowest rank, file system", _setup)
def cmd_io(a: argparse.Namespace) -> int:
    """`mpilens io`: print the I/O of a run per file (text or JSON)."""
    from .. import rundir
    from ..report import io_text

    run = rundir.load(a.rundir)
    data = run.io
    if a.json:
        json.dump(data.to_json(), sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write(io_text.render_text(data))
    return 0
