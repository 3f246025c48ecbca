"""`mpilens compare A... --vs B...` (comparison-based profiling over many runs) and
`mpilens repeat -n N` (make those runs: one command N times, or two interleaved)."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from .. import layout, safefile
from ..cli import command
from ..errors import LaunchError, MpilensError


# ------------------------------------------------------------------------------------- compare
def _setup_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", nargs="+", type=Path, metavar="A", help="run directories of the baseline")
    p.add_argument("--vs", nargs="+", type=Path, required=True, metavar="B", help="run directories of the experiment")
    p.add_argument("--ranks", choices=["mean", "max", "sum"], default="mean",
                   help="how one run's per-rank times make one value (default: mean; wall time is always the "
                        "slowest rank's)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    p.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0: reproducible)")
    p.add_argument("--sites", action="store_true",
                   help="also compare each MPI function per call site (file:line; runs with MPILENS_CALLSITE_DEPTH > 0)")
    p.add_argument("--all", action="store_true", help="show every node, also those too small to matter")
    p.add_argument("--stats", action="store_true", help="also show min and max over runs")
    p.add_argument("--html", type=Path, metavar="FILE", help="also write the comparison as a self-contained HTML page")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    p.add_argument("--quiet", action="store_true", help="no progress display")


@command("compare", "compare runs of a baseline A with runs of an experiment B, region by region, call by call",
         _setup_compare)
def cmd_compare(a: argparse.Namespace) -> int:
    """`mpilens compare A... --vs B...`: compare two sets of runs, with confidence intervals and tests."""
    from .. import compare
    from ..progress import Steps

    with Steps(4 + (1 if a.html else 0), quiet=a.quiet) as step:
        step("reading run directories")
        sa = compare.load_side(a.a, "A")
        sb = compare.load_side(a.vs, "B")
        c = compare.compare(sa, sb, ranks=a.ranks, confidence=a.confidence, resamples=a.resamples, seed=a.seed,
                            step=step, by_site=a.sites)
        if a.html:
            from ..report import compare_html

            step("HTML page")
            try:
                safefile.write_text(a.html, compare_html.render(c))
            except OSError as err:
                raise MpilensError(f"cannot write {a.html}: {err.strerror}") from err
    if a.json:
        json.dump(c.to_dict(), sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write(compare.render_text(c, show_all=a.all, stats=a.stats))
    if a.html:
        print(f"mpilens: HTML comparison {a.html}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------- repeat
def _setup_repeat(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--runs", type=int, required=True, metavar="N", help="runs of each command")
    p.add_argument("-o", "--output", type=Path, help="folder for the run directories (default: mpilens-repeat-<date>)")
    p.add_argument("--a", dest="cmd_a", metavar="'CMD_A'", help="baseline command (one quoted string)")
    p.add_argument("--b", dest="cmd_b", metavar="'CMD_B'", help="experimental command (one quoted string); runs "
                                                                  "alternate a, b, a, b, ...")
    p.add_argument("--warmup", type=int, default=0, metavar="K", help="unmeasured runs of each command first (default 0)")
    p.add_argument("--mode", help="what to measure, passed to mpilens run")
    p.add_argument("--mpi", choices=["openmpi", "mpich"], help="passed to mpilens run (default: detected per command)")
    p.add_argument("--set", action="append", default=[], metavar="MPILENS_NAME=VALUE", help="passed to mpilens run")
    p.add_argument("--keep-going", action="store_true", help="go on after a run fails (default: stop)")
    p.add_argument("--show-output", action="store_true",
                   help="let the jobs print to the terminal (default: into DIR/logs/<run>.log)")
    p.add_argument("--json", action="store_true", help="print the run directories as one JSON document")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- LAUNCHER ARGS... (without --a/--b)")


def _run_once(cmd: list[str], outdir: Path, a: argparse.Namespace, log: Path | None) -> tuple[int, float]:
    """Run one job under `mpilens run`; return (exit status, seconds)."""
    argv = [sys.executable, "-m", "mpilens", "run", "-o", str(outdir)]
    if a.mode:
        argv += ["--mode", a.mode]
    if a.mpi:
        argv += ["--mpi", a.mpi]
    for s in a.set:
        argv += ["--set", s]
    argv += ["--", *cmd]
    t0 = time.monotonic()
    if log is None:
        status = subprocess.run(argv).returncode
    else:
        with open(log, "wb") as f:
            status = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT).returncode
    return status, time.monotonic() - t0


@command("repeat", "run a job N times under mpilens (or two jobs, interleaved) for mpilens compare", _setup_repeat)
def cmd_repeat(a: argparse.Namespace) -> int:
    """`mpilens repeat`: run a job (or two, interleaved) several times under mpilens for `mpilens compare`."""
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if (a.cmd_a is None) != (a.cmd_b is None):
        raise MpilensError("give both --a 'CMD_A' and --b 'CMD_B', or one command after --")
    if a.cmd_a is not None and cmd:
        raise MpilensError("give either --a/--b or a command after --, not both")
    commands: dict[str, list[str]] = {}
    if a.cmd_a is not None:
        for side, text in (("a", a.cmd_a), ("b", a.cmd_b)):
            try:
                commands[side] = shlex.split(text)
            except ValueError as err:
                raise MpilensError(f"--{side} {text!r}: {err}") from err
            if not commands[side]:
                raise MpilensError(f"--{side} is empty")
    elif cmd:
        commands["a"] = cmd
    else:
        raise MpilensError("no command given: mpilens repeat -n 10 -- mpirun -np 4 ./app, or --a 'CMD' --b 'CMD'")
    if a.runs < 1:
        raise MpilensError(f"-n {a.runs}: expected at least 1 run")
    out = (a.output or Path(f"mpilens-repeat-{time.strftime('%Y%m%d-%H%M%S')}")).expanduser().absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LaunchError(f"{out} already exists and is not empty; choose another -o (nothing was overwritten)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LaunchError(f"cannot create {out}: {err.strerror}") from err

    # the order: warm-up runs, then a-001, b-001, a-002, b-002, ... so that a drift of the machine
    # (other load, thermal state) falls on both sides alike
    plan: list[tuple[str, str, Path]] = []
    for i in range(1, a.warmup + 1):
        plan += [(s, f"warmup-{s}-{i:03d}", out / f"warmup-{s}-{i:03d}") for s in commands]
    for i in range(1, a.runs + 1):
        plan += [(s, f"{s}-{i:03d}", out / f"{s}-{i:03d}") for s in commands]
    manifest = {"commands": {s: c for s, c in commands.items()}, "runs": a.runs, "warmup": a.warmup, "order": []}
    failed = 0
    for k, (side, name, path) in enumerate(plan, 1):
        log = None if a.show_output else out / "logs" / f"{name}.log"
        if log is not None:
            log.parent.mkdir(exist_ok=True)
        status, secs = _run_once(commands[side], path, a, log)
        ok = status == 0 and layout.profile_file(path).exists()
        manifest["order"].append({"side": side, "name": name, "dir": str(path), "status": status, "seconds": secs,
                                  "ok": ok})
        print(f"mpilens repeat: [{k}/{len(plan)}] {name} {'ok' if ok else f'FAILED (exit status {status})'} "
              f"{secs:.1f} s" + (f"; see {log}" if not ok and log else ""), file=sys.stderr)
        if not ok:
            failed += 1
            if not a.keep_going:
                break
    safefile.write_text(out / "repeat.json", json.dumps(manifest, indent=2) + "\n")
    done = {s: [e["dir"] for e in manifest["order"] if e["side"] == s and e["ok"] and not e["name"].startswith("warmup")]
            for s in commands}
    suggestion = None
    if "b" in commands:
        suggestion = f"mpilens compare {shlex.quote(str(out))}/a-* --vs {shlex.quote(str(out))}/b-*"
    if a.json:
        json.dump({"output": str(out), "runs": done, "failed": failed, "compare": suggestion}, sys.stdout, indent=2)
        print()
    else:
        for s in commands:
            print(f"{s}: {len(done[s])} run directories: {out}/{s}-001 .. {out}/{s}-{a.runs:03d}")
        if suggestion:
            print(f"compare them with:\n  {suggestion}")
        else:
            print(f"compare them with another set of runs:\n  mpilens compare {shlex.quote(str(out))}/a-* --vs OTHER...")
    return 1 if failed else 0
