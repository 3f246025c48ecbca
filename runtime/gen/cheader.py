"""Read the PMPI prototypes an MPI installation declares in its mpi.h.

The MPI standard says which functions exist; the installed header says which of them this MPI
has and with which exact C types (const qualifiers, MPI_Count vs int, ...). A wrapper must match
the header's prototype to compile, so the generator takes types from here and meaning from the
standard.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

_QUALIFIERS = {"const", "volatile", "unsigned", "signed", "long", "short", "struct", "enum", "restrict"}


@dataclass(frozen=True)
class CParam:
    """One parameter of a prototype: its declaration with the name cut out, and the name."""

    before: str  # type text before the name, e.g. "const void *"
    after: str  # array suffix after the name, e.g. "[]" or "[][3]"
    name: str  # the header's own parameter name ("" when unnamed)

    def declare(self, name: str) -> str:
        """Return the declaration of this parameter under another name."""
        sep = "" if self.before.endswith(("*", " ")) else " "
        return f"{self.before}{sep}{name}{self.after}"

    @property
    def type(self) -> str:
        """Return the parameter's type, with array suffixes turned into pointers."""
        t = self.before.strip()
        if self.after:
            t += " *"
        return t


@dataclass(frozen=True)
class CPrototype:
    """A PMPI prototype: return type and parameters."""

    name: str  # MPI name, without the P
    ret: str
    params: tuple[CParam, ...]
    varargs: bool


def _strip_balanced(text: str, keyword: str) -> str:
    """Remove every `keyword(...)` with balanced parentheses from text."""
    out = []
    i = 0
    while True:
        j = text.find(keyword, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.find("(", j + len(keyword))
        if k < 0 or text[j + len(keyword):k].strip():
            out.append(keyword)
            i = j + len(keyword)
            continue
        depth = 0
        m = k
        while m < len(text):
            if text[m] == "(":
                depth += 1
            elif text[m] == ")":
                depth -= 1
                if depth == 0:
                    break
            m += 1
        i = m + 1


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse_param(text: str) -> CParam:
    text = " ".join(text.split())
    m = re.match(r"^(.*?)((?:\s*\[[^\]]*\])*)$", text)
    assert m
    core, after = m.group(1).strip(), m.group(2).replace(" ", "")
    idents = [t for t in re.findall(r"[A-Za-z_]\w*", core) if t not in _QUALIFIERS]
    nm = re.search(r"([A-Za-z_]\w*)$", core)
    if nm and len(idents) >= 2:
        before = core[: nm.start()].rstrip()
        return CParam(before=before if before.endswith("*") else before + " ", after=after, name=nm.group(1))
    # unnamed parameter
    return CParam(before=core + " ", after=after, name="")


def strip_attributes(preprocessed: str) -> str:
    """Return header text without GNU attributes and asm labels."""
    return _strip_balanced(_strip_balanced(preprocessed, "__attribute__"), "__asm__")


def parse_prototypes(preprocessed: str) -> dict[str, CPrototype]:
    """Return the PMPI prototypes found in preprocessed header text, keyed by MPI name."""
    text = strip_attributes(preprocessed)
    text = re.sub(r"\b(__extension__|extern|__inline__|__inline)\b", " ", text)
    protos: dict[str, CPrototype] = {}
    for m in re.finditer(r"\b(PMPI_\w+)\s*\(", text):
        name = m.group(1)
        # return type: from the end of the previous statement up to the name
        start = max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start()), text.rfind("{", 0, m.start()))
        ret = " ".join(text[start + 1 : m.start()].split())
        if not ret or "typedef" in ret or "(" in ret or "=" in ret or "static" in ret:
            continue
        # parameter list up to the matching parenthesis
        depth, k = 0, m.end() - 1
        while k < len(text):
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        rest = text[k + 1 :].lstrip()
        if not rest.startswith(";"):
            continue  # a definition or something else, not a declaration
        raw = _split_top_level(text[m.end() : k])
        varargs = bool(raw) and raw[-1] == "..."
        if varargs:
            raw = raw[:-1]
        if raw == ["void"]:
            raw = []
        params = tuple(_parse_param(p) for p in raw)
        protos[name[1:]] = CPrototype(name=name[1:], ret=ret, params=params, varargs=varargs)
    return protos


def function_macros(macro_dump: str) -> set[str]:
    """Return the names defined as function-like macros (`cc -E -dM` output)."""
    return set(re.findall(r"^#define\s+(P?MPI_\w+)\(", macro_dump, flags=re.M))


def read_header(cc: str) -> tuple[dict[str, CPrototype], set[str], str]:
    """Preprocess `#include <mpi.h>` with the MPI compiler wrapper and parse it: (prototypes,
    function-like macros, the preprocessed text)."""
    src = "#include <mpi.h>\n"
    pre = subprocess.run([cc, "-E", "-P", "-x", "c", "-"], input=src, capture_output=True, text=True, check=True)
    mac = subprocess.run([cc, "-E", "-dM", "-x", "c", "-"], input=src, capture_output=True, text=True, check=True)
    return parse_prototypes(pre.stdout), function_macros(mac.stdout), pre.stdout
