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
    # mpi_f08 parameters, IERROR included (OPTIONAL there); large-count variants have them too
    f08: tuple[StdParam, ...] | None = None
    # the standard's C prototype ("int MPI_Send(const void* buf, ...)"): the declaration used where
    # the build's mpi.h is older than the standard
    c_decl: str = ""


def _c_params(expression) -> tuple[StdParam, ...]:
    return tuple(
        StdParam(p.name, p._parseset["kind"], p._parseset["param_direction"]) for p in expression.parameters
    )


def _f_params(expression) -> tuple[StdParam, ...] | None:
    if expression is None:
        return None
    return tuple(
        StdParam(p._parseset["name"], p._parseset["kind"], p._parseset["param_direction"], p.type)
        for p in expression.parameters
    )


def _c_text(expression) -> str:
    # the Forum's data writes varargs as LaTeX
    return str(expression).replace("\\ldots", "...")


def callbacks() -> dict[str, str]:
    """Return the C typedef of every callback type of the standard (large-count variants included),
    keyed by type name: "typedef void MPI_User_function(void* invec, ...)"."""
    std.use_api_version(1)
    out = {}
    for cb in std.CALLBACKS.values():
        exprs = [cb.express.iso_c] + ([cb.express.embiggen.iso_c] if cb.has_embiggenment() else [])
        for e in exprs:
            if e is not None:
                out[e.name] = _c_text(e)
    return out


def load() -> list[StdFunction]:
    """Return every C function of the standard (large-count variants included), sorted by name."""
    std.use_api_version(1)
    out: list[StdFunction] = []
    for proc in std.PROCEDURES.values():
        c = proc.express.iso_c
        if c is None:
            continue
        f90 = proc.express.f90
        fparams = _f_params(f90)
        is_fn = f90 is not None and f90.return_type is not None
        f08 = proc.express.f08
        f08params = _f_params(f08) if f08 is not None and f08.return_type is None else None
        out.append(StdFunction(c.name, c.name, False, _c_params(c), fparams, is_fn, f08params, _c_text(c)))
        if proc.has_embiggenment():
            big = proc.express.embiggen
            big08 = big.f08
            out.append(StdFunction(big.iso_c.name, c.name, True, _c_params(big.iso_c), None, False,
                                   _f_params(big08) if big08 is not None and big08.return_type is None else None,
                                   _c_text(big.iso_c)))
    out.sort(key=lambda f: f.name)
    return out
