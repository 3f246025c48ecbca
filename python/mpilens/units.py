"""Human-readable numbers for reports."""

from __future__ import annotations

import math
from typing import Any


def seconds(s: float | None) -> str:
    """Format a duration: 1.23 s, 45.6 ms, 7.8 us, 90 ns."""
    if s is None:
        return "n/a"
    a = abs(s)
    if a >= 100:
        return f"{s:.0f} s"
    if a >= 1:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e9:.3g} ns"


def size(b: float | None) -> str:
    """Format a byte count with binary prefixes: 0 B, 12 B, 1.5 KiB, 3.2 GiB."""
    if b is None:
        return "n/a"
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, i = float(b), 0
    while abs(v) >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    return f"{v:.0f} {units[i]}" if i == 0 or v >= 100 else f"{v:.3g} {units[i]}"


def count(n: float | None) -> str:
    """Format a count with thousands separators."""
    return "n/a" if n is None else f"{n:,.0f}"


def percent(x: float | None) -> str:
    """Format a fraction as a percentage."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def counter(name: str, v: Any, missing: str = "n/a") -> str:
    """A counter's value for people: sizes for *BYTES*, durations for *_TIME, counts otherwise;
    `missing` when the counter was not measured (never shown as zero)."""
    if v is None:
        return missing
    if "BYTES" in name:
        return size(v)
    if name.endswith("_TIME"):
        return seconds(v)
    return f"{int(v):,}"


def mib(b: float | None, digits: int = 1) -> str:
    """Bytes as MiB with `digits` decimals ("-" when missing)."""
    return "-" if b is None or (isinstance(b, float) and math.isnan(b)) else f"{b / 2**20:.{digits}f}"


def mib_mean_std(row: dict[str, Any]) -> str:
    """A row with "mean" and "std" in bytes as "mean ± std" in MiB ("-" when nothing was measured)."""
    return "-" if row["mean"] is None else f"{mib(row['mean'])} ± {mib(row['std'])}"
