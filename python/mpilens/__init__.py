"""mpilens: insight into the performance of MPI applications through low-level metrics.

    import mpilens
    run = mpilens.load("myrun")             # a run directory written by `mpilens run`
    mpilens.frames.functions(run)           # pandas DataFrames for your own analyses
    mpilens.to_hatchet("myrun")             # a Hatchet GraphFrame (needs llnl-hatchet)
    mpilens.to_thicket(["run1", "run2"])    # a Thicket ensemble (needs llnl-thicket)
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from .rundir import Run, load  # noqa: E402

__all__ = ["Run", "frames", "load", "to_hatchet", "to_thicket", "__version__"]


def to_hatchet(run: Any) -> Any:
    """Return a run (a Run or a run directory) as a Hatchet GraphFrame: regions -> MPI functions,
    metrics time/calls/bytes per (node, rank). See mpilens.exports.hatchet."""
    return importlib.import_module(".exports.hatchet", __name__).to_hatchet(run)


def to_thicket(runs: Any) -> Any:
    """Return several runs (Runs or run directories) as one Thicket ensemble. See mpilens.exports.hatchet."""
    return importlib.import_module(".exports.hatchet", __name__).to_thicket(runs)


def __getattr__(name: str) -> Any:
    # pandas is imported only by those who use the DataFrames, not by every command
    if name == "frames":
        return importlib.import_module(".frames", __name__)
    raise AttributeError(f"module 'mpilens' has no attribute {name!r}")
