"""Human-readable numbers for reports."""

from __future__ import annotations


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
