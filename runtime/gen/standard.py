"""The MPI functions of the standard, as the MPI Forum's pympistandard package describes them."""

from __future__ import annotations

from dataclasses import dataclass

import pympistandard as std


@dataclass(frozen=True)
class StdParam:
    """A parameter of a standard function: name, kind (the Forum's semantic type) and direction."""

    name: str
    kind: str
    direction: str  # in | out | inout
    ftype: str = ""  # Fortran (mpif.h) type, for Fortran parameters


@dataclass(frozen=True)
class StdFunction:
    """A C binding of the standard, with its mpif.h binding when the standard defines one."""

    name: str  # C name, e.g. MPI_Send or MPI_Send_c
    base: str  # name without the large-count suffix
    large_count: bool
    params: tuple[StdParam, ...]
    fortran: tuple[StdParam, ...] | None  # mpif.h parameters, IERROR included; None: no binding
    fortran_is_function: bool  # the mpif.h binding returns a value (MPI_WTIME, ...)


def _c_params(expression) -> tuple[StdParam, ...]:
    return tuple(
        StdParam(p.name, p._parseset["kind"], p._parseset["param_direction"]) for p in expression.parameters
    )


def load() -> list[StdFunction]:
    """Return every C function of the standard (large-count variants included), sorted by name."""
    std.use_api_version(1)
    out: list[StdFunction] = []
    for proc in std.PROCEDURES.values():
        c = proc.express.iso_c
        if c is None:
            continue
        f90 = proc.express.f90
        fparams = None
        if f90 is not None:
            fparams = tuple(
                StdParam(p._parseset["name"], p._parseset["kind"], p._parseset["param_direction"], p.type)
                for p in f90.parameters
            )
        is_fn = f90 is not None and f90.return_type is not None
        out.append(StdFunction(c.name, c.name, False, _c_params(c), fparams, is_fn))
        if proc.has_embiggenment():
            big = proc.express.embiggen.iso_c
            out.append(StdFunction(big.name, c.name, True, _c_params(big), None, False))
    out.sort(key=lambda f: f.name)
    return out
