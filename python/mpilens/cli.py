"""The `mpilens` command line. Each subcommand is a function registered in COMMANDS with @command;
it gets its parsed arguments and returns the exit status, so tests can call main([...])
in-process. The basic commands are here; those of other analyses live in mpilens/commands/, one
module each, found automatically."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from . import __version__, safefile, units
from .errors import MpilensError

COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], Callable[[argparse.ArgumentParser], None], str]] = {}


def command(name: str, help: str, setup: Callable[[argparse.ArgumentParser], None]):
    """Register the decorated function as subcommand `name`; `setup` adds its arguments."""
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = (fn, setup, help)
        return fn
    return register


def _err(msg: str) -> None:
    print(f"mpilens: {msg}", file=sys.stderr)


# ------------------------------------------------------------------------------------- run
def _setup_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", type=Path, help="run directory to create (default: mpilens-<program>-<date>)")
    p.add_argument("--mode", help="what to measure, comma separated (default: profile)")
    p.add_argument("--mpi", choices=["openmpi", "mpich", "abi"], help="MPI of the program (default: detected with ldd)")
    p.add_argument("--set", action="append", default=[], metavar="MPILENS_NAME=VALUE",
                   help="a runtime setting (see `mpilens config`); repeatable")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- LAUNCHER ARGS... (or the program itself)")


@command("run", "run an MPI job under mpilens and print its run directory", _setup_run)
def cmd_run(a: argparse.Namespace) -> int:
    """`mpilens run`: run the job under mpilens; the launcher's exit status (1 when nothing was measured or the job
    ended before MPI_Finalize)."""
    from . import imports, launch, layout, recover

    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    settings: dict[str, str] = {}
    for item in a.set:
        name, sep, value = item.partition("=")
        if not sep or not name.startswith("MPILENS_"):
            raise MpilensError(f"--set {item}: expected MPILENS_NAME=VALUE")
        settings[name] = value
    if a.mode is not None:
        if settings.get("MPILENS_MODE", a.mode) != a.mode:
            raise MpilensError(f"--mode {a.mode} and --set MPILENS_MODE={settings['MPILENS_MODE']} disagree: "
                               "give the modes once")
        settings["MPILENS_MODE"] = a.mode
    plan = launch.plan_run(cmd, a.mpi, a.output, settings)
    for note in plan.notes:
        _err(note)
    if plan.imports is not None:
        imports.write(plan.imports, layout.imports_file(plan.outdir))
    status = launch.execute(plan)
    out = plan.outdir
    if not out.is_dir():  # removed while the job ran (a cleanup, a scratch purge): the job's status stands
        _err(f"the run directory {out} was removed while the job ran: nothing it measured is left "
             f"(exit status {status})")
        return status
    # the ranks that left their measurements: a partial file, or (killed) a statistics file
    partial = sorted({layout.rank_of(fam, f) for fam in ("partial", "stats") for f in layout.files(out, fam)} - {None})
    if layout.profile_file(out).exists():
        print(f"mpilens: run directory {out}", file=sys.stderr)
        return status
    if partial or layout.meta_file(out).exists():
        what = f"partial data of {len(partial)} rank{'s' if len(partial) != 1 else ''} in {out} (`mpilens report " \
               f"{out}` shows what was measured)" if partial else f"no measurements; see {layout.meta_file(out)}"
        # a rank that ended in MPI_Finalize leaves its statistics file in state 3 (the merge under way);
        # then the profile could not be written (a full file system: the runtime said so above)
        finalizing = bool(partial) and all(recover.stats_state(f) == 3 for f in layout.files(out, "stats"))
        if not layout.files(out, "partial") and finalizing:
            _err(f"the job reached MPI_Finalize but mpilens could not write the profile (the lines above say why; "
                 f"exit status {status}); `mpilens report {out}` says what of its {len(partial)} "
                 f"rank{'s' if len(partial) != 1 else ''} survives")
        else:
            _err(f"the job ended before MPI_Finalize (exit status {status}); {what}")
        return status or 1  # an incomplete run is not a success, whatever the launcher says
    layout.claim_file(out).unlink(missing_ok=True)  # nothing measured: the directory is free again
    if plan.created_outdir:
        layout.imports_file(out).unlink(missing_ok=True)
        for d in (layout.partial_dir(out), out):
            try:
                d.rmdir()
            except OSError:
                pass
    _err(f"nothing was measured: {plan.program or cmd[0]} never called MPI_Init (nor MPI_Session_init) under mpilens "
         f"(exit status {status})")
    return status or 1


# ------------------------------------------------------------------------------------- report
def _setup_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--json", action="store_true", help="print the summary and findings as one JSON document")
    p.add_argument("--html", type=Path, metavar="FILE", help="also write the self-contained HTML report to FILE")
    p.add_argument("--png", type=Path, metavar="DIR", help="also write the report's figures as PNG files into DIR")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--snapshot", type=int, metavar="N",
                   help="report the statistics as of the N-th MPI_Pcontrol(3) or (4) call of each rank "
                        "(mpiP's intermediate reports) instead of the whole run")


@command("report", "print the report of a run directory", _setup_report)
def cmd_report(a: argparse.Namespace) -> int:
    """`mpilens report`: print the text report (or the JSON one), and write the HTML report and PNG figures when
    asked."""
    from . import findings, layout, rundir, summary
    from .progress import Steps
    from .report import text
    from .report.sections import Context, all_sections

    # steps: read, statistics, one per HTML section, one per PNG figure (about five per section)
    sections = len(all_sections()) if (a.html or a.png) else 0
    traced = layout.present(a.rundir, "trace") and a.snapshot is None  # a trace covers the whole run
    with Steps(2 + traced + (sections if a.html else 0) + (5 * sections if a.png else 0), quiet=a.quiet) as step:
        step("reading the run directory")
        run = rundir.load(a.rundir) if a.snapshot is None else rundir.load_snapshot(a.rundir, a.snapshot)
        step("statistics across ranks")
        s = summary.summarize(run.profile)
        found = findings.find(run, s)
        # one cache for the text, HTML and PNG reports: the trace is loaded and matched once, and
        # what a section computes for the page its figures reuse
        ctx = Context(run, s, found)
        timeline_found = None  # None: the run has no trace; [] nothing stands out in it
        if traced:
            from .report.sections.timeline import findings_of

            step("matching the trace")
            timeline_found = findings_of(ctx)
        if a.html:
            from .report import html

            page = html.render(run, s, found, step, cache=ctx.cache)
            try:
                safefile.write_text(a.html, page)
            except OSError as err:
                raise MpilensError(f"cannot write {a.html}: {err.strerror}") from err
        if a.png:
            from .report import html

            try:
                html.write_figures(run, s, found, a.png, step, cache=ctx.cache)
            except OSError as err:
                raise MpilensError(f"cannot write figures into {a.png}: {err.strerror}") from err
    if a.json:
        json.dump(text.as_json(run, s, found, timeline_found, cache=ctx.cache), sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write(text.render(run, s, found, timeline_found, cache=ctx.cache))
    if a.html:
        print(f"mpilens: HTML report {a.html}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------- config
def _setup_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the settings table as JSON")


@command("config", "list the MPILENS_* settings of the runtime", _setup_config)
def cmd_config(a: argparse.Namespace) -> int:
    """`mpilens config`: print the table of MPILENS_* settings (text or JSON)."""
    from .settings import load_settings

    table = load_settings()
    if a.json:
        json.dump(table, sys.stdout, indent=2)
        print()
        return 0
    for s in table:
        choices = f" ({', '.join(s['choices'])})" if s.get("choices") else ""
        print(f"{s['name']}  [{s['type']}{choices}, default {s['default']!r}]")
        print(f"    {s['description']}")
    return 0


# ------------------------------------------------------------------------------------- main
def _load_command_modules() -> None:
    """Import every module of mpilens.commands: each registers its subcommands with @command."""
    import importlib
    import pkgutil

    from . import commands

    for mod in pkgutil.iter_modules(commands.__path__):
        importlib.import_module(f"{commands.__name__}.{mod.name}")


class _Version(argparse.Action):
    """--version: the runtimes too, read only when asked for."""

    def __call__(self, parser, namespace, values, option_string=None):
        from .build_info import describe

        print(f"mpilens {__version__}\n{describe()}")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    # names are the application's bytes: one that is not UTF-8 reaches the terminal escaped
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=units.ENCODING_ERRORS)
    _load_command_modules()
    parser = argparse.ArgumentParser(prog="mpilens", description="Insight into the performance of MPI applications.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version and the runtimes installed (the MPI each was built with)")
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    # only the chosen command's arguments are set up: a command's setup may import what it needs to
    # list its choices (e.g. every exporter), which the other commands need not pay for
    args = sys.argv[1:] if argv is None else argv
    chosen = next((x for x in args if not x.startswith("-")), None)
    for name, (_, setup, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            setup(p)
    a = parser.parse_args(argv)
    fn = COMMANDS[a.cmd][0]
    try:
        return fn(a)
    except MpilensError as err:
        _err(str(err))
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
