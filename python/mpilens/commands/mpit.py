"""`mpilens mpit`: the MPI library's own variables (MPI_T): list them, show what a run set and
recorded, recommend settings; `mpilens tune`: measure a recommended setting against the current one."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..cli import command
from ..errors import MpilensError


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", metavar="list|show|recommend|RUNDIR",
                   help="list: the variables of an MPI; show RUNDIR: cvars set and pvar series of a run; "
                        "recommend RUNDIR: the recommendation rules; RUNDIR alone: show and recommend")
    p.add_argument("rundir", nargs="?", type=Path, help="run directory (show, recommend)")
    p.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi", help="list: which MPI (default openmpi)")
    p.add_argument("--program", metavar="PROG", help="list: the variables of the MPI library this program links "
                                                        "(its family and its own library: the MPI a job of it runs on)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--pvars", action="store_true", help="list: performance variables only")
    kind.add_argument("--cvars", action="store_true", help="list: control variables only")
    p.add_argument("--match", metavar="REGEX", help="list: only variables whose name matches (search, case-insensitive)")
    p.add_argument("--rule", action="append", default=[], help="recommend: only this rule (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _list(a: argparse.Namespace) -> int:
    from .. import mpit

    library = None
    if a.program:
        from ..launch import program_library

        flavor, why, library = program_library(a.program)
        if flavor not in ("openmpi", "mpich") or library is None:
            raise MpilensError(f"--program {a.program}: no Open MPI or MPICH library found by ldd ({why})")
        a.mpi = flavor
    doc = mpit.merged_variables(a.mpi, library)
    try:
        pat = re.compile(a.match, re.I) if a.match else None
    except re.error as err:
        raise MpilensError(f"--match {a.match}: not a regular expression ({err})") from err
    kinds = ["pvars"] if a.pvars else ["cvars"] if a.cvars else ["cvars", "pvars"]
    out: dict[str, Any] = {"mpi": a.mpi, "library": doc["library"]}
    for k in kinds:
        out[k] = [v for v in doc[k] if pat is None or pat.search(v["name"])]
    out["counts"] = {k: len(out[k]) for k in kinds}
    if a.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    lib = mpit.short_library(doc["library"])
    print(f"{lib}: " + ", ".join(f"{len(out[k])} {k[:-1]}{'s' if len(out[k]) != 1 else ''}" for k in kinds)
          + (f" matching {a.match!r}" if a.match else ""))
    if "cvars" in out and out["cvars"]:
        print("\nControl variables (cvars)")
        print(f"  {'name':44} {'datatype':22} {'scope':9} {'bind':12} {'verbosity':13} value / description")
        for v in out["cvars"]:
            val = "-" if v["value"] is None else repr(v["value"])
            known = "" if v["after_init"] else " [registered before MPI_Init only]"
            print(f"  {v['name']:44} {v['datatype']:22} {v['scope']:9} {v['bind']:12} {v['verbosity']:13} {val}{known}")
            if v["description"]:
                print(f"      {v['description'][:150]}")
    if "pvars" in out:
        print("\nPerformance variables (pvars)")
        if not out["pvars"]:
            print("  none" + (" (MPICH builds them only with --enable-mpit-pvars)" if a.mpi == "mpich" and not a.match else ""))
        for v in out["pvars"]:
            known = "" if v["after_init"] else " [registered before MPI_Init only]"
            flags = ",".join(f for f in ("readonly", "continuous", "atomic") if v[f])
            print(f"  {v['name']:44} {v['class']:14} {v['datatype']:22} {v['bind']:12} {v['verbosity']:13} {flags}{known}")
            if v["description"]:
                print(f"      {v['description'][:150]}")
    return 0


def _show_text(m: Any, results: list[Any] | None) -> None:
    from .. import mpit

    print(f"mpilens mpit: {m.path} ({mpit.short_library(m.library)})")
    print("\nControl variables set")
    if not m.cvars_set:
        print("  none (MPILENS_CVARS and MPILENS_COMM_CVARS were empty)")
    for c in m.cvars_set:
        where = f" on communicator {c['communicator']!r} (at MPI_Comm_set_name)" if c.get("communicator") else " (at MPI_Init)"
        new = c.get("new")
        print(f"  {c['name']}: {c.get('old')} -> {new if new is not None else 'not applied'}{where}, via {c.get('via')}"
              + (f"; {c['note']}" if c.get("note") else "") + (f"; {c['error']}" if c.get("error") else ""))
    print("\nPerformance variables")
    if not m.recorded:
        print("  not recorded (run with --mode mpit)")
    elif m.pvars_total == 0:
        print("  absent: this MPI exposes no MPI_T performance variables")
    else:
        rows = mpit.series_summary(m)
        print(f"  {m.pvars_total} exposed, {len(rows)} recorded" + (f" (regex {m.regex!r})" if m.regex else ""))
        for r in rows:
            comm = f" [{r['communicator']}]" if r["communicator"] else ""
            if not r["readable"]:
                print(f"  {r['name']}{comm}: absent (could not be read)")
                continue
            print(f"  {r['name']}{comm} ({r['class']}): {r['samples']} samples on {r['ranks']} ranks, max {r['max']:.6g}, "
                  f"last (sum over ranks) {r['last_sum']:.6g}")
        for reason, names in mpit.group_skipped(m.skipped).items():
            print(f"  not read: {', '.join(names)} ({reason})")
    for p in m.problems:
        print(f"Note: {p}")
    if results is not None:
        _recommend_text(results)


def _recommend_text(results: list[Any]) -> None:
    print("\nRecommendations")
    for r in results:
        print(f"  [{r.status}] {r.title} ({r.rule})")
        for e in r.evidence:
            print(f"      evidence: {e}")
        for rec in r.recommendations:
            print(f"    -> {rec.message}")
            for line in rec.apply:
                print(f"         {line}")


@command("mpit", "MPI_T: list the MPI's variables, show what a run set and recorded, recommend settings", _setup)
def cmd_mpit(a: argparse.Namespace) -> int:
    """`mpilens mpit`: list the MPI's MPI_T variables, show what a run set and recorded, or recommend settings."""
    from .. import mpit, recommend

    if a.what == "list":
        return _list(a)
    if a.what in ("show", "recommend"):
        if a.rundir is None:
            raise MpilensError(f"mpilens mpit {a.what} needs a run directory")
        rundir = a.rundir
    else:
        rundir = Path(a.what)
    if not rundir.is_dir():
        raise MpilensError(f"{rundir} is not a directory (expected list, show RUNDIR, recommend RUNDIR or RUNDIR)")
    unknown = [r for r in a.rule if r not in recommend.RULES]
    if unknown:
        raise MpilensError(f"--rule {unknown[0]}: not one of {', '.join(recommend.RULES)}")
    from .. import rundir as rundir_mod

    m = mpit.load(rundir)
    run = rundir_mod.load(rundir) if a.what != "show" else None
    results = recommend.recommend(run, a.rule or None) if run is not None else None
    # what is wrong with the run is wrong with the recommendations drawn from it
    problems = m.problems + [p for p in (run.problems if run is not None else []) if p not in m.problems]
    if a.json:
        doc: dict[str, Any] = {"run": str(rundir), "mpi": m.mpi, "cvars_set": m.cvars_set,
                               "pvars": {"recorded": m.recorded, "exposed": m.pvars_total,
                                         "absent": m.recorded and m.pvars_total == 0,
                                         "series": mpit.series_summary(m), "skipped": m.skipped},
                               "problems": problems}
        if results is not None:
            doc["recommendations"] = [r.to_dict() for r in results]
        if a.what == "recommend":
            doc = {"run": str(rundir), "mpi": m.mpi, "recommendations": doc["recommendations"], "problems": problems}
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    if a.what == "recommend":
        _recommend_text(results or [])
    else:
        _show_text(m, results)
    return 0


# ------------------------------------------------------------------------------------- tune
def _setup_tune(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rule", required=True, help="the rule whose recommendation to measure (e.g. eager)")
    p.add_argument("--reps", type=int, default=5, help="repetitions of each setting (default 5)")
    p.add_argument("--value", help="measure this value instead of the recommended one")
    p.add_argument("--mpi", choices=["openmpi", "mpich"], help="MPI of the program (default: detected)")
    p.add_argument("--keep", type=Path, metavar="DIR", help="keep the run directories in DIR")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- LAUNCHER ARGS...")


def _one_run(cmd: list[str], mpi: str | None, out: Path, settings: dict[str, str]) -> float:
    from .. import launch, layout, rundir
    from .._layout import ProfileKeys

    plan = launch.plan_run(cmd, mpi, out, settings)
    import subprocess

    proc = subprocess.run(plan.argv, env=plan.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0 or not layout.profile_file(out).exists():
        raise MpilensError(f"the job failed (exit {proc.returncode}) under {settings or 'the current settings'}: "
                           f"{proc.stderr.strip()[-300:]}")
    return float(rundir.load(out).profile[ProfileKeys.WALL_TIME_S])


def speedup_ci(base: list[float], tuned: list[float]) -> tuple[float, float, float]:
    """Speedup median(base)/median(tuned) with the 95 % percentile bootstrap interval `mpilens
    compare` uses (NaN bounds when the samples cannot give one)."""
    import numpy as np

    from ..compare import bootstrap_ratio_ci

    point = float(np.median(base) / np.median(tuned))
    lo, hi = bootstrap_ratio_ci(np.asarray(base), np.asarray(tuned))[0]
    return point, float(lo), float(hi)


@command("tune", "run a job with the current and the recommended setting of a rule and measure the speedup", _setup_tune)
def cmd_tune(a: argparse.Namespace) -> int:
    """`mpilens tune`: run a job with the current and the recommended setting of a rule and report the speedup."""
    from .. import recommend
    from ..progress import Steps

    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        raise MpilensError("no command given: mpilens tune --rule eager -- mpirun -np 8 ./app")
    if a.rule not in recommend.RULES:
        raise MpilensError(f"--rule {a.rule}: not one of {', '.join(recommend.RULES)}")
    if a.reps < 2:
        raise MpilensError("--reps must be at least 2 (a confidence interval needs repetitions)")
    work = Path(tempfile.mkdtemp(prefix="mpilens-tune-")) if a.keep is None else a.keep
    if a.keep is not None:
        work.mkdir(parents=True, exist_ok=True)
    try:
        with Steps(1 + 2 * a.reps, quiet=a.json) as step:
            step("probe run with the current settings")
            probe = work / "probe"
            _one_run(cmd, a.mpi, probe, {})
            results = recommend.recommend(probe, [a.rule])
            recs = [r for res in results for r in res.recommendations if r.setting and (r.value or a.value)]
            if not recs:
                doc = {"rule": a.rule, "fired": False, "evidence": results[0].evidence if results else [],
                       "status": results[0].status if results else "not evaluated"}
                if a.json:
                    json.dump(doc, sys.stdout, indent=2)
                    print()
                else:
                    print(f"mpilens tune: rule {a.rule} does not recommend a setting for this job ({doc['status']}):")
                    for e in doc["evidence"]:
                        print(f"  {e}")
                return 0
            rec = recs[0]
            value = a.value or rec.value
            tuned_set = {"MPILENS_CVARS": f"{rec.setting}={value}"}
            base, tuned = [], []
            for i in range(a.reps):  # interleaved, so that drift of the machine hits both alike
                step(f"repetition {i + 1}: current setting ({rec.setting}={rec.current})")
                base.append(_one_run(cmd, a.mpi, work / f"current-{i}", {}))
                step(f"repetition {i + 1}: {rec.setting}={value}")
                tuned.append(_one_run(cmd, a.mpi, work / f"tuned-{i}", tuned_set))
        point, lo, hi = speedup_ci(base, tuned)
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    verdict = ("unknown" if not (lo == lo and hi == hi)  # NaN: no interval, no verdict
               else "faster" if lo > 1.0 else "slower" if hi < 1.0 else "no significant difference")
    doc = {"rule": a.rule, "fired": True, "setting": rec.setting, "current": rec.current, "tuned": value,
           "recommendation": rec.message, "reps": a.reps, "wall_time_s": {"current": base, "tuned": tuned},
           "speedup": point, "ci95": [lo, hi], "verdict": verdict,
           "kept": str(work) if a.keep is not None else None}
    if a.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print(f"mpilens tune: rule {a.rule}: {rec.setting} {rec.current} -> {value}, {a.reps} runs each (interleaved)")
    import statistics

    for label, xs in (("current:", base), ("tuned:", tuned)):
        print(f"  {label:8} mean {statistics.fmean(xs):.4f} s, median {statistics.median(xs):.4f} s  "
              + " ".join(f"{x:.4f}" for x in xs))
    print(f"  speedup {point:.3f}x, 95 % confidence interval [{lo:.3f}, {hi:.3f}] (bootstrap): {verdict}")
    return 0
