"""Recommendation rules on what a run measured and the MPI_T variables of its MPI (`mpilens mpit
recommend`, `mpilens tune`, the report's MPI_T section).

A rule is a function ``rule(ctx: RuleContext) -> RuleResult`` registered with ``@rule(name, title)``.
It looks at the run (profile, pvar series, the MPI in use) and returns a RuleResult whose status is
``fired`` (with one or more Recommendation), ``quiet`` (evaluated, nothing to recommend) or
``not evaluated`` (the data it needs is absent from this run or this MPI); every result carries
its evidence, so a user can see why a rule fired or did not. A Recommendation names the exact
setting for the MPI in use (an MPI_T cvar / MCA parameter / environment variable and a value) and
how to apply it (MPILENS_CVARS, OMPI_MCA_*, mpirun --mca).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import rundir, units
from ._layout import FunctionKeys, ProfileKeys, SizeBinKeys
from .build_info import MPI_FLAVORS
from .errors import LaunchError
from .mpit import MpitRun, list_variables


# ------------------------------------------------------------------------------------- rules
@dataclass
class Recommendation:
    """A setting to try, for the MPI in use, and why."""

    rule: str
    message: str
    setting: str | None            # cvar / MCA parameter / environment variable
    value: str | None
    current: str | None
    apply: list[str]               # ways to apply it, e.g. "MPILENS_CVARS=btl_vader_eager_limit=262144"
    evidence: list[str]


@dataclass
class RuleResult:
    """What a recommendation rule concluded: fired, quiet or not evaluated, with its evidence and
    recommendations."""
    rule: str
    title: str
    status: str                    # fired | quiet | not evaluated
    evidence: list[str]
    recommendations: list[Recommendation] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON object."""
        return asdict(self)


@dataclass
class RuleContext:
    """What a rule sees: the run's profile and metadata, its MPI_T data and the MPI in use."""

    path: Path
    meta: dict[str, Any]
    profile: dict[str, Any]
    mpit: MpitRun
    mpi: str | None
    device: str                    # MPICH device (ch4:ucx, ch3:nemesis, ...) or ""
    single_host: bool
    cvar_default: Callable[[str], str | None]


RULES: dict[str, tuple[str, Callable[[RuleContext], RuleResult]]] = {}


def rule(name: str, title: str):
    """Register a recommendation rule."""
    def register(fn: Callable[[RuleContext], RuleResult]) -> Callable[[RuleContext], RuleResult]:
        RULES[name] = (title, fn)
        return fn
    return register


SEND_FUNCS = ("MPI_Send", "MPI_Isend", "MPI_Ssend", "MPI_Issend", "MPI_Rsend", "MPI_Irsend", "MPI_Bsend",
              "MPI_Ibsend", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Send_init", "MPI_Start", "MPI_Startall")
WAIT_FUNCS = ("MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Recv", "MPI_Send", "MPI_Sendrecv",
              "MPI_Sendrecv_replace", "MPI_Ssend", "MPI_Probe", "MPI_Mprobe")


def _measured(xs: list) -> list[float]:
    """The values of the ranks that left data (None: a rank of an incomplete run that did not)."""
    return [float(x) for x in xs if x is not None]


def _mean(xs: list) -> float:
    xs = _measured(xs)
    return sum(xs) / len(xs) if xs else 0.0


def current_value(ctx: RuleContext, name: str) -> str | None:
    """The value a cvar had in the run: set by mpilens, given on the command line with --mca, or
    the MPI's default."""
    for c in ctx.mpit.cvars_set:
        if c.get("name") == name and not c.get("communicator") and c.get("new") is not None:
            return str(c["new"])
    cmd = ctx.meta.get("command") or []
    for i, a in enumerate(cmd[:-2]):
        if a in ("--mca", "-mca") and cmd[i + 1] == name:
            return cmd[i + 2]
    for i, a in enumerate(cmd[:-1]):
        if a == "-x" and cmd[i + 1].startswith(f"OMPI_MCA_{name}="):
            return cmd[i + 1].split("=", 1)[1]
    return ctx.cvar_default(name)


def eager_setting(ctx: RuleContext) -> tuple[str, str, list[str]]:
    """(cvar, how it is named for the user, notes) of the eager/rendezvous switch of the MPI in use."""
    if ctx.mpi == "openmpi":
        if ctx.single_host and ctx.cvar_default("btl_sm_eager_limit") is not None:  # Open MPI 5: vader is sm
            return "btl_sm_eager_limit", "Open MPI shared-memory BTL (sm) eager limit", []
        if ctx.single_host:
            return "btl_vader_eager_limit", "Open MPI shared-memory BTL (vader) eager limit", []
        return "btl_tcp_eager_limit", "Open MPI TCP BTL eager limit", [
            "on-node messages follow btl_vader_eager_limit; with pml ucx, UCX_RNDV_THRESH decides instead"]
    if "ch3" in ctx.device:
        return "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "MPICH CH3 eager limit", []
    if ctx.single_host or not ctx.device:
        return ("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", "MPICH CH4 shared-memory cell size (larger messages "
                "go through the rendezvous protocol)", [])
    return ("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", "MPICH CH4 shared-memory cell size",
            ["between nodes the ch4:ucx netmod follows UCX_RNDV_THRESH (a UCX environment variable)"])


def _apply_lines(ctx: RuleContext, name: str, value: str) -> list[str]:
    lines = [f"mpilens run --set MPILENS_CVARS={name}={value} -- ..."]
    if ctx.mpi == "openmpi":
        lines += [f"export OMPI_MCA_{name}={value}", f"mpirun --mca {name} {value} ..."]
    elif name.startswith("MPIR_CVAR_"):
        lines += [f"export {name}={value}", f"mpiexec -genv {name} {value} ..."]
    return lines


@rule("eager", "Eager limit vs the measured point-to-point sizes")
def rule_eager(ctx: RuleContext) -> RuleResult:
    """Rule: compare the MPI's eager limit with the point-to-point message sizes measured; recommend a limit when
    many messages are just above it."""
    title = RULES["eager"][0]
    P, B = ProfileKeys, SizeBinKeys
    sizes = ctx.profile.get(P.MESSAGE_SIZES) or {}
    funcs = ctx.profile.get(P.FUNCTIONS) or {}
    name, what, notes = eager_setting(ctx)
    cur = current_value(ctx, name)
    try:
        limit = int(cur) if cur is not None else None
    except ValueError:
        limit = None
    if limit is None or limit <= 0:
        return RuleResult("eager", title, "not evaluated",
                          [f"the value of {name} in this run is not known ({cur!r})"])
    bins: list[tuple[int, int, int]] = []  # (min, max, calls over ranks)
    for fn in SEND_FUNCS:
        for b in sizes.get(fn, []):
            bins.append((int(b[B.MIN_BYTES]), int(b[B.MAX_BYTES]), int(sum(_measured(b[B.CALLS])))))
    total = sum(c for _, _, c in bins)
    if total == 0:
        return RuleResult("eager", title, "not evaluated", ["the run sent no point-to-point messages"])
    above = [(lo, hi, c) for lo, hi, c in bins if lo > limit]
    n_above = sum(c for _, _, c in above)
    wall = float(ctx.profile.get(P.WALL_TIME_S) or 0.0)
    nr = int(ctx.profile.get(P.NRANKS) or 1)
    wait = sum(_mean(funcs[f][FunctionKeys.TIME_S]) for f in WAIT_FUNCS if f in funcs)
    share = wait / wall if wall > 0 else 0.0
    evidence = [f"{name} = {limit} bytes ({what})",
                f"{n_above} of {total} point-to-point messages ({100.0 * n_above / total:.0f} %) are larger "
                "(rendezvous-sized)",
                f"time in waits and blocking point-to-point calls: {wait:.4g} s per rank, {100 * share:.0f} % "
                f"of the {wall:.4g} s run ({nr} ranks)"] + notes
    if n_above == 0:
        return RuleResult("eager", title, "quiet", evidence + ["every message is sent eagerly already"])
    # the smallest power of two that covers 95 % of the rendezvous-sized messages
    above.sort()
    acc, target = 0, 0
    for _lo, hi, c in above:
        acc += c
        target = hi + 1
        if acc >= 0.95 * n_above:
            break
    if n_above < 0.25 * total or share < 0.10:
        why = "few messages are rendezvous-sized" if n_above < 0.25 * total else "little time is spent waiting"
        return RuleResult("eager", title, "quiet", evidence + [f"not recommended: {why}"])
    if target > 4 << 20:
        return RuleResult("eager", title, "quiet", evidence + [
            f"the rendezvous-sized messages reach {units.size(target)}: too large to send eagerly"])
    value = str(target)
    if ctx.mpi == "mpich" and name == "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE":
        value = str(target + 4096)  # the cell also holds the message header
    msg = (f"{100.0 * n_above / total:.0f} % of the point-to-point messages are larger than {name}={limit} and "
           f"{100 * share:.0f} % of the time is spent waiting: try {name}={value} so that they are sent eagerly "
           "(more memory per peer; measure with `mpilens tune --rule eager`)")
    rec = Recommendation("eager", msg, name, value, str(limit), _apply_lines(ctx, name, value), evidence)
    return RuleResult("eager", title, "fired", evidence, [rec])


COLL_ALGO = {  # function -> (Open MPI coll_tuned parameter, MPICH cvar)
    "MPI_Allreduce": ("coll_tuned_allreduce_algorithm", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"),
    "MPI_Bcast": ("coll_tuned_bcast_algorithm", "MPIR_CVAR_BCAST_INTRA_ALGORITHM"),
    "MPI_Reduce": ("coll_tuned_reduce_algorithm", "MPIR_CVAR_REDUCE_INTRA_ALGORITHM"),
    "MPI_Allgather": ("coll_tuned_allgather_algorithm", "MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM"),
    "MPI_Alltoall": ("coll_tuned_alltoall_algorithm", "MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM"),
    "MPI_Barrier": ("coll_tuned_barrier_algorithm", "MPIR_CVAR_BARRIER_INTRA_ALGORITHM"),
}


@rule("collective-wait", "Collective wait dominance")
def rule_collective(ctx: RuleContext) -> RuleResult:
    """Rule: a collective that dominates the run: recommend balancing the work when the ranks' times differ much,
    else trying its algorithms."""
    title = RULES["collective-wait"][0]
    F = FunctionKeys
    funcs = ctx.profile.get(ProfileKeys.FUNCTIONS) or {}
    wall = float(ctx.profile.get(ProfileKeys.WALL_TIME_S) or 0.0)
    colls = {f: d for f, d in funcs.items() if d.get(F.CLASS) == "collective"}
    if not colls or wall <= 0:
        return RuleResult("collective-wait", title, "not evaluated", ["the run made no collective calls"])
    per = sorted(((_mean(d[F.TIME_S]), f) for f, d in colls.items()), reverse=True)
    t, fn = per[0]
    d = colls[fn]
    times = _measured(d[F.TIME_S]) or [0.0]
    spread = (max(times) - min(times)) / max(times) if max(times) > 0 else 0.0
    evidence = [f"{fn} takes {t:.4g} s per rank ({100 * t / wall:.0f} % of the run); the fastest rank spends "
                f"{min(times):.4g} s in it, the slowest {max(times):.4g} s"]
    if t / wall < 0.25:
        return RuleResult("collective-wait", title, "quiet", evidence + ["collectives take less than 25 % of the run"])
    recs = []
    if spread > 0.5:
        recs.append(Recommendation(
            "collective-wait", f"{fn} dominates the run, and most of it is waiting for late ranks (the ranks' times "
            f"in it differ by {100 * spread:.0f} %): balance the work before {fn}; no MPI setting removes that wait",
            None, None, None, [], evidence))
    else:
        names = COLL_ALGO.get(fn)
        if names:
            name = names[0] if ctx.mpi == "openmpi" else names[1]
            extra = ["coll_tuned_use_dynamic_rules=1 must be set too (MCA)"] if ctx.mpi == "openmpi" else []
            recs.append(Recommendation(
                "collective-wait", f"{fn} dominates the run with balanced ranks: compare its algorithms with "
                f"{name} (see `mpilens mpit list --match {name}` for the choices)" + (
                    "; Open MPI reads it only with coll_tuned_use_dynamic_rules=1" if ctx.mpi == "openmpi" else ""),
                name, None, current_value(ctx, name), _apply_lines(ctx, name, "N"), evidence + extra))
    return RuleResult("collective-wait", title, "fired" if recs else "quiet", evidence, recs)


UNEXPECTED_PVARS = ("pml_ob1_unexpected_msgq_length", "unexpected_recvq_length")


@rule("unexpected", "Unexpected-message flood")
def rule_unexpected(ctx: RuleContext) -> RuleResult:
    """Rule: a flood of unexpected messages (from the MPI's unexpected-queue pvars): recommend pre-posting
    receives."""
    title = RULES["unexpected"][0]
    counters = ctx.profile.get(ProfileKeys.COUNTERS) or {}
    have = [p for p in UNEXPECTED_PVARS if ctx.mpit.has(p)]
    if not have:
        why = ("the run was not recorded with --mode mpit" if not ctx.mpit.recorded else
               f"this MPI exposes none of {', '.join(UNEXPECTED_PVARS)} (absent, not zero)")
        if "unexpected" in json.dumps(counters).lower():
            why += "; the counters of the run do not say either"
        return RuleResult("unexpected", title, "not evaluated", [why])
    name = have[0]
    peak = max((v for s in ctx.mpit.by_name(name) for v in s.totals() if v is not None), default=0.0)
    evidence = [f"{name}: at most {peak:.0f} messages waited in an unexpected queue (any rank, any communicator)"]
    if peak < 64:
        return RuleResult("unexpected", title, "quiet", evidence)
    eager, _, _ = eager_setting(ctx)
    msg = (f"up to {peak:.0f} messages arrived before their receives were posted: post the receives earlier "
           f"(MPI_Irecv before the matching sends); a smaller {eager} bounds the memory they hold")
    rec = Recommendation("unexpected", msg, eager, None, current_value(ctx, eager), [], evidence)
    return RuleResult("unexpected", title, "fired", evidence, [rec])


POOL_PVARS = (("mv2_vbuf_max_use", "mv2_vbuf_allocated", "MPIR_CVAR_VBUF_POOL_SIZE"),)


@rule("pool", "Queue and pool over-provisioning")
def rule_pool(ctx: RuleContext) -> RuleResult:
    """Rule: queue or pool buffers over-provisioned (used against allocated pvars): recommend a smaller pool."""
    title = RULES["pool"][0]
    for used, allocated, cvar in POOL_PVARS:
        if ctx.mpit.has(used) and ctx.mpit.has(allocated):
            u = max(v for s in ctx.mpit.by_name(used) for v in s.totals() if v is not None)
            a = max(v for s in ctx.mpit.by_name(allocated) for v in s.totals() if v is not None)
            evidence = [f"{used} peaked at {u:.0f} of {a:.0f} allocated ({allocated})"]
            if a > 0 and u < 0.5 * a:
                value = str(max(1, int(u * 1.25)))
                return RuleResult("pool", title, "fired", evidence, [Recommendation(
                    "pool", f"at most {u:.0f} of {a:.0f} pool buffers were used: try {cvar}={value}", cvar, value,
                    current_value(ctx, cvar), _apply_lines(ctx, cvar, value), evidence)])
            return RuleResult("pool", title, "quiet", evidence)
    names = ", ".join(f"{u}/{a}" for u, a, _ in POOL_PVARS)
    return RuleResult("pool", title, "not evaluated", [
        f"this MPI exposes no pool-usage pvars ({names} in MVAPICH2); Open MPI 4.1 and MPICH 4.0 have none"
        if ctx.mpit.recorded else "the run was not recorded with --mode mpit"])


def context(path: Any) -> RuleContext:
    """Everything the rules need of a run directory (a path, or a mpilens.Run already read)."""
    run = path if isinstance(path, rundir.Run) else rundir.load(path)
    meta = run.meta or {}
    m = run.mpit
    lib = (meta.get("mpi") or {}).get("library", "")
    dev = re.search(r"Device:\s*(\S+)", lib)
    hosts = meta.get("hosts") or []
    defaults: dict[str, str | None] = {}

    # a default is the job's MPI's: asked of the library the job ran on (meta.json's mpi.path) where
    # this machine has it, else of this installation's MPI when it is the same MPI; else unknown
    bound = (meta.get("mpi") or {}).get("path")
    library = bound if isinstance(bound, str) and bound and Path(bound).is_file() else None

    def same_mpi(doc: dict[str, Any]) -> bool:
        return library is not None or " ".join(str(doc.get("library", "")).split()) == " ".join(lib.split())

    def default(name: str) -> str | None:
        if name not in defaults:
            defaults[name] = None
            if m.mpi in MPI_FLAVORS:
                try:
                    for init in (True, False):
                        doc = list_variables(m.mpi, init, library)
                        if not same_mpi(doc):
                            break
                        for c in doc["cvars"]:
                            if c["name"] == name and c.get("value") is not None:
                                defaults[name] = c["value"]
                                break
                        if defaults[name] is not None:
                            break
                except LaunchError:
                    pass
        return defaults[name]

    return RuleContext(path=run.path, meta=meta, profile=run.profile, mpit=m, mpi=m.mpi,
                       device=dev.group(1) if dev else "", single_host=len(hosts) <= 1, cvar_default=default)


def recommend(path: Any, rules: list[str] | None = None) -> list[RuleResult]:
    """Run the rules (all, or those named) on a run directory (a path or a mpilens.Run)."""
    ctx = context(path)
    out = []
    for name, (_title, fn) in RULES.items():
        if rules and name not in rules:
            continue
        out.append(fn(ctx))
    return out
