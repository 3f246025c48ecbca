"""The dynamic symbols of an ELF file, read directly (the layout is ELF's own, not a run-directory
record): a few milliseconds where readelf takes tens, for every library a program loads at each
`mpilens run` (python/mpilens/imports.py)."""

from __future__ import annotations

import mmap
import struct

STT_OBJECT = 1
SHT_DYNSYM = 11


def dynamic_symbols(path: str) -> list[tuple[str, bool, bool]] | None:
    """(name, is an object, is defined) of every dynamic symbol of a 64-bit little-endian ELF file
    (the section table's .dynsym, read directly: a few milliseconds where readelf takes tens);
    None when it is not one or cannot be read."""
    try:
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: an empty file
        return None
    with data:
        return _read_dynsym(data)


def _read_dynsym(data: mmap.mmap) -> list[tuple[str, bool, bool]] | None:
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        for _name, typ, _flags, _addr, off, size, link, _info, _align, entsize in sections:
            if typ != SHT_DYNSYM or entsize != 24:
                continue
            str_off, str_size = sections[link][4], sections[link][5]
            strtab = data[str_off:str_off + str_size]
            out = []
            for st_name, st_info, _other, shndx, _value, _size in struct.iter_unpack("<IBBHQQ", data[off:off + size]):
                end = strtab.find(b"\0", st_name)
                name = strtab[st_name:end].decode("utf-8", "replace")
                out.append((name, (st_info & 0xF) == STT_OBJECT, shndx != 0))
            return out
        return []
    except (struct.error, IndexError, OverflowError, ValueError):  # a damaged file
        return None
