"""Who owns a run directory (its claim.json) and whether that run still runs."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from . import layout
from .errors import RunDirectoryError


def still_running(path: str | Path) -> int | None:
    """The pid of the process that claimed the run directory (mpilens run, or rank 0 of a job
    preloaded by hand) when it runs on this host now and the run has not finished, else None: a
    report of a running job says so rather than calling it killed."""
    try:
        claim = json.loads(layout.read_regular(layout.claim_file(path), limit=1 << 16))
        pid, host, created = int(claim["pid"]), str(claim["host"]), float(claim["created"])
    except (OSError, RunDirectoryError, ValueError, KeyError, TypeError):
        return None
    if host != socket.gethostname() or pid <= 0 or layout.profile_file(path).exists():
        return None
    try:  # the process's start: it is the claimant only when it started before the claim
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        started = boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, IndexError, ValueError):
        return None
    return pid if started <= created + 2 else None
