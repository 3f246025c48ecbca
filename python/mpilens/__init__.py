"""mpilens: insight into the performance of MPI applications through low-level metrics.

    import mpilens
    run = mpilens.load("myrun")             # a run directory written by `mpilens run`
    mpilens.frames.functions(run)           # pandas DataFrames for your own analyses
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from .rundir import Run, load  # noqa: E402

__all__ = ["Run", "frames", "load", "__version__"]


def __getattr__(name: str) -> Any:
    # pandas is imported only by those who use the DataFrames, not by every command
    if name == "frames":
        return importlib.import_module(".frames", __name__)
    raise AttributeError(f"module 'mpilens' has no attribute {name!r}")
