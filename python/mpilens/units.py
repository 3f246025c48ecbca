"""Human-readable numbers for reports."""

from __future__ import annotations

import codecs
import math
import re
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


_SIZE = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
         "g": 1024**3, "gb": 1000**3, "gib": 1024**3, "t": 1024**4, "tb": 1000**4, "tib": 1024**4}


def parse_size(text: str) -> float:
    """'500M', '2 GiB', '1.5GB', '4096' -> bytes (K, M, G, T and KiB... binary; KB, MB... decimal);
    ValueError for anything else."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _SIZE or float(m.group(1)) <= 0:
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2GiB, 1.5GB)")
    return float(m.group(1)) * _SIZE[m.group(2).lower()]


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


# Names are bytes from the application; the run directory's JSON carries a byte that is not UTF-8
# as the escape \udcXX (runtime/src/core/json.h), which Python reads as a lone surrogate (what its
# "surrogateescape" makes of such a byte). Shown, it is \xXX; its bytes are name.encode("utf-8",
# "surrogateescape").
_SHOWN = {0xDC80 + b: f"\\x{b + 0x80:02x}" for b in range(0x80)}


_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}


def printable(name: str, controls: bool = False) -> str:
    """A name as text any output takes (a terminal, HTML, Parquet, OTF2): each byte that was not
    UTF-8 shown as \\xXX, and control characters too when controls; everything else as it is."""
    if any(0xDC80 <= ord(c) <= 0xDCFF for c in name):
        name = name.translate(_SHOWN)
    return name.translate(_CONTROLS) if controls else name


def name_bytes(name: str) -> bytes:
    """The bytes of a name as the application gave them."""
    return name.encode("utf-8", "surrogateescape")


def _shown_bytes(err: UnicodeError) -> tuple[str, int]:
    """Encoding error handler "mpilens.printable": a name's byte that was not UTF-8 written as \\xXX
    (as printable shows it), anything else unencodable as a backslash escape."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start:err.end]
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c.encode("ascii", "backslashreplace")
                   .decode() for c in bad), err.end


# what the command line's output streams and the files it writes use for the names' other bytes
ENCODING_ERRORS = "mpilens.printable"
codecs.register_error(ENCODING_ERRORS, _shown_bytes)

