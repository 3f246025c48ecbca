"""The trace exports, now in mpilens.exports (one module per format: chrome, parquet, otf2); their
names stay importable from here."""

from __future__ import annotations

from ..exports import Progress
from ..exports.chrome import _micros, chrome
from ..exports.common import region_visits as _regions
from ..exports.otf2 import otf2
from ..exports.parquet import parquet

__all__ = ["Progress", "_micros", "_regions", "chrome", "otf2", "parquet"]
