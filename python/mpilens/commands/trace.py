"""`mpilens trace`: list the findings of a trace, and export it (--format: the trace formats of
mpilens.exports, as `mpilens export FORMAT` writes them)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import units
from ..cli import command
from ..errors import MpilensError, RunDirectoryError


def _setup(p: argparse.ArgumentParser) -> None:
    from .. import exports

    p.add_argument("rundir", type=Path)
    p.add_argument("--format", choices=exports.names("trace"), help="export the trace in this format (with -o)")
    p.add_argument("-o", "--output", type=Path, help="file (chrome: .json, parquet: .parquet) or OTF2 directory")
    from .export import add_selection

    add_selection(p)
    p.add_argument("--json", action="store_true", help="print the summary and findings as one JSON document")
    p.add_argument("--engine", metavar="WHERE",
                   help="where the analysis runs, out of core, rank by rank: local (this machine's processes, the "
                        "default; a trace under 16 MiB in this process), serial (this process), or a Dask "
                        "scheduler's address (tcp://host:8786; pip install 'mpilens[dask]'). With --format or a "
                        "selection the trace is read into memory instead")
    p.add_argument("--workers", type=int, metavar="N", help="with --engine local: N processes (default: as many as "
                                                             "the cores and the memory allow)")
    p.add_argument("--scratch", type=Path, metavar="DIR",
                   help="where the out-of-core analysis keeps the events meanwhile (about 80 bytes per event; "
                        "default: the system's temporary directory; with workers on other hosts, a directory they "
                        "share)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--estimate", action="store_true",
                   help="predict the trace a run like this one would write (its bytes per rank and in total, the "
                        "writer's CPU, the exports' sizes), from its profile: no trace needed; a trace of part of "
                        "the run (MPILENS_TRACE_WINDOW=0:5) calibrates it")
    p.add_argument("--profile-only", action="store_true",
                   help="with --estimate: from the profile alone, even when the run holds a trace to calibrate on")
    p.add_argument("--under", metavar="SIZE",
                   help="with --estimate: suggest filters that bring the trace under this size (500M, 2GiB)")


@command("trace", "export a trace (chrome, parquet, otf2) and print its findings", _setup)
def cmd_trace(a: argparse.Namespace) -> int:
    """`mpilens trace`: print a trace's summary and findings, and export it with --format."""
    from .. import exports
    from ..progress import Steps
    from ..trace import findings, timeline
    from .export import SELECTION, select

    if a.estimate:
        return _estimate(a)
    if a.under or a.profile_only:
        raise MpilensError(f"{'--under' if a.under else '--profile-only'} goes with --estimate")
    if a.format and not a.output:
        raise MpilensError("--format needs -o FILE")
    if a.output and not a.format:
        raise MpilensError("-o needs --format chrome|parquet|otf2")
    if a.workers is not None and a.workers < 1:
        raise MpilensError(f"--workers {a.workers}: give 1 or more")
    if not a.format and not any(getattr(a, k) for k in SELECTION):
        return _out_of_core(a)
    if a.engine or a.workers or a.scratch:
        raise MpilensError("--engine, --workers and --scratch are for the analysis alone: with --format or a "
                           "selection the trace is read into memory")
    with Steps(4, quiet=a.quiet) as step:
        tl = select(timeline.load(a.rundir, step), {k: getattr(a, k) for k in SELECTION})
        step("matching messages")
        m = tl.messages
        step("findings")
        found = findings.find(tl)
        written = None
        if a.format:
            e = exports.get(a.format)
            e.check_output(a.output)
            try:
                written = e.write(tl, a.output, step)
            except OSError as err:
                raise MpilensError(f"cannot write {a.output}: {err.strerror}") from err
    summary = {"run": str(a.rundir), "nranks": tl.nranks, "events": int(len(tl.ev)), "messages": int(len(m.send_ev)),
               "unmatched_sends": m.unmatched_sends, "unmatched_receives": m.unmatched_recvs,
               "message_ends_outside": m.outside, "recorded_filters": tl.filters.describe(),
               "selection": {k: getattr(a, k) for k in SELECTION if getattr(a, k)},
               "collective_instances": int(tl.collectives.instance.max() + 1) if len(tl.collectives.instance) else 0,
               "trace_bytes": tl.file_bytes, "writer_cpu_s": tl.writer_cpu_s, "clock_error_s": tl.clock_error_s,
               "complete": tl.complete, "problems": tl.problems, "export": written,
               "findings": [f.to_dict() for f in found], "engine": "in memory"}
    return _print(a, summary, tl.filters, written, found)


def _out_of_core(a: argparse.Namespace) -> int:
    """`mpilens trace RUN`: the summary and findings, analysed out of core (mpilens.trace.scan)."""
    from ..progress import Steps
    from ..trace import scan

    with Steps(4, quiet=a.quiet) as step:
        s = scan.scan(a.rundir, engine=a.engine, workers=a.workers, scratch=a.scratch, progress=step)
    summary = {"run": str(a.rundir), "nranks": s.nranks, "events": s.events, "messages": s.messages,
               "unmatched_sends": s.unmatched_sends, "unmatched_receives": s.unmatched_recvs,
               "message_ends_outside": s.outside, "recorded_filters": s.filters.describe(), "selection": {},
               "collective_instances": s.collective_instances, "trace_bytes": s.file_bytes,
               "writer_cpu_s": s.writer_cpu_s, "clock_error_s": s.clock_error_s, "complete": s.complete,
               "problems": s.problems, "export": None, "findings": [f.to_dict() for f in s.findings],
               "engine": s.engine}
    return _print(a, summary, s.filters, None, s.findings)


def _print(a: argparse.Namespace, summary: dict, filters, written: dict | None, found: list) -> int:
    """The summary and findings of `mpilens trace`, as text or JSON."""
    if a.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
        return 0
    outside = summary["message_ends_outside"]
    print(f"mpilens trace: {a.rundir}: {summary['events']} events of {summary['nranks']} ranks, {summary['messages']} "
          f"messages matched ({summary['unmatched_sends']} sends and {summary['unmatched_receives']} receives without "
          "a partner" + (f"; {outside} ends whose partner the trace left out" if outside else "") + "), "
          f"{summary['collective_instances']} collective instances")
    if filters.any():
        print("Recorded: " + "; ".join(filters.describe()))
    if summary["selection"]:
        print("Selected: " + ", ".join(f"--{k} {v}" for k, v in summary["selection"].items()))
    size = f"Trace: {units.size(summary['trace_bytes'])}"
    if summary["events"]:
        size += f", {summary['trace_bytes'] / summary['events']:.1f} bytes per event"
    if summary["writer_cpu_s"] is not None:
        size += f"; the ranks' writer threads used {units.seconds(summary['writer_cpu_s'])} of CPU"
    print(size)
    if summary["clock_error_s"]:
        print("Clocks: " + "; ".join(f"{h} aligned to rank 0's host within "
                                     + (units.seconds(e) if e is not None else "an unknown error (older trace)")
                                     for h, e in sorted(summary["clock_error_s"].items())))
    for p in summary["problems"]:
        print(f"Note: {p}")
    if written is not None:
        print(f"Wrote {a.output} ({a.format}): " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in written.items()))
    print("Findings:" if found else "Findings: nothing stands out.")
    for f in found:
        print(f"  {f.message}")
    return 0


def _estimate(a: argparse.Namespace) -> int:
    """`mpilens trace --estimate RUN`: the trace of a run like RUN, predicted from its profile (and
    calibrated on RUN's own trace of part of the run, when it has one)."""
    from .. import layout, rundir
    from .._layout import FunctionKeys, ProfileKeys, RankKeys
    from ..trace import estimate, reader

    run = rundir.load(a.rundir)
    if run.profile is None:
        raise MpilensError(f"{a.rundir}: no profile to estimate from")
    wall = max((r.get(RankKeys.WALL_TIME_S) or 0 for r in run.profile.get(ProfileKeys.RANKS, [])), default=0) or None
    sample, unread = [], []
    for f in [] if a.profile_only else layout.trace_files(a.rundir):
        try:
            sample.append(reader.composition(f))
        except RunDirectoryError as err:  # a damaged rank's file: the others calibrate
            unread.append(str(err))
    est = estimate.estimate(run.profile, wall, sample)
    est["trace_files_unread"] = unread
    # what makes the events: the functions with the most calls, over every rank
    calls = {n: sum(f[FunctionKeys.CALLS]) for n, f in run.profile.get(ProfileKeys.FUNCTIONS, {}).items()}
    top = sorted(calls.items(), key=lambda kv: -kv[1])[:5]
    est["largest"] = [{"function": n, "calls": c, "share": c / est["events"] if est["events"] else None} for n, c in top]
    if a.under:
        try:
            under = units.parse_size(a.under)
        except ValueError as err:
            raise MpilensError(f"--under: {err}") from None
        est["under_bytes"] = under
        est["suggestions"] = estimate.suggest(run.profile, under, wall, sample)
    if a.json:
        json.dump({"run": str(a.rundir), **est}, sys.stdout, indent=2)
        print()
        return 0
    per = [x["bytes"] for x in est["ranks"]]
    print(f"mpilens trace --estimate: {a.rundir}: a trace of this run would hold about {est['events']:,.0f} events "
          f"in {units.size(est['bytes'])} ({units.size(min(per))} to {units.size(max(per))} per rank; at least "
          f"{units.size(est['bytes_at_least'])} if every call repeats its function's previous peer, tag and size)")
    cal = est["calibrated_on"]
    print(f"Calibrated on its own trace: {cal['events']:,} events of {cal['ranks']} ranks, "
          f"{cal['bytes_per_event']:.1f} bytes each" if cal else
          "From the profile alone (a trace of part of the run, MPILENS_TRACE_WINDOW=0:5, would calibrate it)")
    for why in unread:
        print(f"Not calibrated on: {why}")
    share = est.get("writer_cpu_share")
    print(f"Writer threads: about {units.seconds(est['writer_cpu_s'])} of CPU"
          + (f" ({share:.1%} of the ranks' time)" if share is not None else ""))
    print("Exports: " + ", ".join(f"{k} {units.size(v)}" for k, v in est["exports"].items()))
    print("Most events come from: " + ", ".join(f"{x['function']} ({x['share']:.0%})" for x in est["largest"]
                                                 if x["share"] is not None))
    if a.under:
        if est["bytes"] <= est["under_bytes"]:
            print(f"Under {units.size(est['under_bytes'])} already: no filter needed")
        elif not est["suggestions"]:
            print(f"No filter alone brings it under {units.size(est['under_bytes'])} (one rank's trace is larger)")
        else:
            print(f"To stay under {units.size(est['under_bytes'])}, any one of (docs/trace.md, \"Trace only what is wanted\"):")
            for x in est["suggestions"]:
                print(f"  --set {x['setting']}={x['value']}   about {units.size(x['bytes'])}: {x['note']}")
    return 0
