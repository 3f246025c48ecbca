#!/usr/bin/env python3
"""The runtime's cost on the 8-byte ping-pong and the message rate, against plain calls in the same
processes (bench/paired.c).

Separate runs of a plain and a measured program do not share the machine: on a VM the placement of
the two ranks on the host's cores, and the host's other tenants, change from one run to the next
(here the plain 8-byte hop moved between 0.11 and 0.72 µs, the plain rate between 3 and 10 M
messages/s, round after round). bench/paired.c alternates, in one pair of processes, batches of a
few milliseconds of MPI_* calls (which the preloaded runtime wraps) and of PMPI_* calls (the MPI's
own entry points: plain calls). Each pair of neighbouring batches gives one ratio, measured under
the same conditions.

For each MPI, each run (--runs) starts one mpirun per runtime (--lib), setting (--set) and kind
(hop, rate), in a fresh random order, each with its own seed for the order of the batches within
a pair. Every run is checked against what the program says its wrapped batches called: the
profile's call counts and bytes of MPI_Send, MPI_Recv, MPI_Isend, MPI_Irecv and MPI_Waitall must
equal them exactly on both ranks (the plain batches must not be counted). The tables give the
median over all pairs of (with / without) for the hop and (without / with) for the rate, a bootstrap
95 % interval that resamples the runs and then the pairs within each (pairs of one run share its
conditions, which differ between runs by more than between pairs), and the range of the runs' own
medians.

Trace mode runs a writer thread, whose work may fall into the plain batches as well: the ratios then
show its cost only in part. The table adds the writer threads' CPU per hop and per message (from
the trace's trailers) and the ratios with all of it charged to the wrapped batches, a bound from
above; bench/overhead.py measures trace mode in separate runs.

--floor adds bench/floor.c's six shims as runtimes of their own: each call counted; each call
counted and timed by two tick reads; each call counted and every byte exact (a receive's from its
status), untimed; the profile's attribution in the least code (every call and byte at its call
site, the functions' totals folded from the sites, the size histogram and the matrix), untimed and
timed; and the timed one with a 24-byte record of every call and completion written to a file, the
least a tracer adds. They do the least an interposition tool can for each; what mpilens adds above
them is the cost of its own design.

Usage: .venv/bin/python bench/paired.py [--lib NAME=DIR ...] [--set - --set MPILENS_TIME_SAMPLE=64]
       [--mode profile|trace] [--runs N] [--pairs N] [--mpi openmpi,mpich] [--json FILE] [--no-check]
       [--floor]
"""
from __future__ import annotations

import argparse
import functools
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import (  # noqa: E402
    MPI_NAMES,
    ROOT,
    BenchError,
    add_comparison_args,
    base_env,
    compile_program,
    copy_runtimes,
    launcher,
    log,
    parse_settings,
    run_comparison,
    sha256,
    tool_env_args,
    trace_size,
)

PAIR_RE = re.compile(r"^pair (\d+) plain (\S+) wrapped (\S+)$", re.M)
CALLS_RE = re.compile(r"^wrapped_calls rank (\d+) (.*)$", re.M)
FLOOR_RE = re.compile(r"^floor_calls rank (\d+) (.*) ticks \d+ sent (\d+) recv (\d+)$", re.M)
# kinds 3 and 4: a line per call site, histogram bin and matrix row
SITE_RE = re.compile(r"^floor_site rank (\d+) (\S+) calls (\d+) sent (\d+) recv (\d+) ticks (\d+) "
                     r"shortest (\d+) longest (\d+)$", re.M)
HIST_RE = re.compile(r"^floor_hist rank (\d+) (\S+) bin (\d+) calls (\d+) ticks (\d+)$", re.M)
MATRIX_RE = re.compile(r"^floor_matrix rank (\d+) peer (\d+) messages (\d+) bytes (\d+)$", re.M)
# --floor: bench/floor.c built as a preloadable shim, per value of FLOOR_KIND (2 and up count bytes,
# 3 and up keep call sites, the histogram and the matrix)
FLOORS = {"floor: calls counted": 0, "floor: calls timed": 1, "floor: bytes exact": 2,
          "floor: sites, untimed": 3, "floor: sites, timed": 4, "floor: traced": 5}
# kind 5: the records it wrote, and their layout in floor-trace.RANK (floor.c: struct record)
TRACE_RE = re.compile(r"^floor_trace rank (\d+) records (-?\d+)$", re.M)
RECORD = [("dt", "<u4"), ("dur", "<u4"), ("bytes", "<u4"), ("tag", "<i4"), ("op", "<u4"), ("peer", "<u2"),
          ("site", "u1"), ("fn", "u1")]
FNS = ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall")  # floor.c's numbers of them
RECORD_DONE, RECORD_BOTH = 0x80, 0x40  # a completion; a call whose operation completed within it
# bytes each wrapped call moves, per kind (bench/paired.c): the ping-pong's 8 bytes; the rate's
# 8-byte messages and its 4-byte acknowledgements
SENDS = ("MPI_Send", "MPI_Isend")  # the wrapped calls that send; the others receive or complete
BYTES = {"hop": {"MPI_Send": 8, "MPI_Recv": 8},
         "rate": {"MPI_Isend": 8, "MPI_Irecv": 8, "MPI_Send": 4, "MPI_Recv": 4, "MPI_Waitall": 0}}
# and the tags of paired.c's calls, per kind
TAGS = {"hop": {"MPI_Send": 1, "MPI_Recv": 1},
        "rate": {"MPI_Isend": 100, "MPI_Irecv": 100, "MPI_Send": 101, "MPI_Recv": 101, "MPI_Waitall": 0}}


def two_level_ci(per_run: list[list[float]], n: int = 1000, seed: int = 1) -> tuple[float, float]:
    """95 % bootstrap interval of the median of pooled pair ratios, resampling the runs and then the
    pairs within each: pairs of one run share its conditions, so runs are the independent units."""
    rng = random.Random(seed)
    meds = []
    for _ in range(n):
        pooled = [x for one in rng.choices(per_run, k=len(per_run)) for x in rng.choices(one, k=len(one))]
        meds.append(statistics.median(pooled))
    meds.sort()
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def check_profile(outdir: Path, kind: str, wrapped: dict[int, dict[str, int]], what: str) -> None:
    """The profile counted exactly the wrapped batches' calls and bytes, rank by rank."""
    try:
        prof = json.loads((outdir / "profile.json").read_text())
    except (OSError, ValueError) as e:
        raise BenchError(f"{what}: no readable profile.json in {outdir}: {e}") from None
    funcs = prof.get("functions", {})
    for rank, calls in wrapped.items():
        for name, n in calls.items():
            f = funcs.get(name)
            got = f["calls"][rank] if f else 0
            if got != n:
                raise BenchError(f"{what}: rank {rank} {name}: the profile counted {got} calls, "
                                 f"the program made {n} wrapped ones")
            per = BYTES[kind].get(name)
            if per is None or n == 0:
                continue
            field_ = "bytes_sent" if name in SENDS else "bytes_recv"
            if f[field_][rank] != n * per:
                raise BenchError(f"{what}: rank {rank} {name}: {field_} {f[field_][rank]}, "
                                 f"expected {n} x {per}")


def compile_floors(mpi: str) -> dict[str, Path]:
    """bench/floor.c as preloadable shims, one per FLOORS entry, in build/bench/<mpi>/."""
    return {name: compile_program(mpi, "floor", ("-shared", "-fPIC", f"-DFLOOR_KIND={kind}"), f"floor-{kind}.so")
            for name, kind in FLOORS.items()}


def name_counts(words: str) -> dict[str, int]:
    """'MPI_Send 3 MPI_Recv 4' as {'MPI_Send': 3, 'MPI_Recv': 4}."""
    w = words.split()
    return {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}


def size_bin(nbytes: int) -> int:
    """The size histogram's bin of a transfer (the runtime's and floor.c's): 2^(b-1) to 2^b - 1 bytes."""
    return nbytes.bit_length()


def check_floor(outdir: Path, kind: str, wrapped: dict[int, dict[str, int]], what: str, floor_kind: int = 0) -> None:
    """The floor shim (floor.c built with FLOOR_KIND=floor_kind) saw exactly the calls the program
    made through MPI_*, rank by rank (its files outdir/floor.RANK); from kind 2 on, exactly the bytes
    they moved; from kind 3 on, the same at their call sites, every transfer in its size bin (with
    the blocking calls' time from kind 4 on) and every send in its destination's row."""
    seen, moved = {}, {}
    text = "".join(p.read_text() for p in sorted(outdir.glob("floor.*")))
    for rank, rest, sent, recv in FLOOR_RE.findall(text):
        seen[int(rank)] = name_counts(rest)
        moved[int(rank)] = (int(sent), int(recv))
    if seen != wrapped:
        raise BenchError(f"{what}: the floor shim counted {seen}, the program made {wrapped}")
    for rank, calls in wrapped.items():
        want = (sum(n * BYTES[kind].get(f, 0) for f, n in calls.items() if f in SENDS),
                sum(n * BYTES[kind].get(f, 0) for f, n in calls.items() if f not in SENDS))
        if moved[rank] != (want if floor_kind >= 2 else (0, 0)):
            raise BenchError(f"{what}: rank {rank}: the floor shim counted (sent, received) bytes {moved[rank]}, "
                             f"the calls moved {want}")
    if floor_kind >= 3:
        check_floor_sites(text, kind, wrapped, what, timed=floor_kind >= 4)
    if floor_kind == 5:
        check_floor_trace(outdir, text, kind, wrapped, what)



def check_floor_sites(text: str, kind: str, wrapped: dict[int, dict[str, int]], what: str, timed: bool) -> None:
    """floor.c's call sites, histogram and matrix (kinds 3 and 4) against the calls the program made:
    each function's sites hold its calls and bytes; its bin of the size histogram every transfer
    (a blocking call's with the time of its sites); the other rank's row of the matrix every send."""
    for rank, calls in wrapped.items():
        sites: dict[str, list[tuple[int, ...]]] = {}
        for r, fn, *nums in SITE_RE.findall(text):
            if int(r) == rank:
                sites.setdefault(fn, []).append(tuple(map(int, nums)))
        hist = {(fn, int(b)): (int(n), int(t)) for r, fn, b, n, t in HIST_RE.findall(text) if int(r) == rank}
        matrix = {int(p): (int(n), int(b)) for r, p, n, b in MATRIX_RE.findall(text) if int(r) == rank}
        want_hist, sends, sent = {}, 0, 0
        for fn, n in calls.items():
            if n == 0:
                if fn in sites:
                    raise BenchError(f"{what}: rank {rank}: a call site of {fn}, which the program never called")
                continue
            per = BYTES[kind].get(fn, 0)
            got = tuple(map(sum, zip(*sites.get(fn, []))))
            if got[:3] != (n, n * per if fn in SENDS else 0, 0 if fn in SENDS else n * per):
                raise BenchError(f"{what}: rank {rank}: {fn}'s call sites hold (calls, sent, received) {got[:3]}, "
                                 f"the program made {n} calls of {per} bytes")
            for c, _, _, ticks, shortest, longest in sites[fn]:
                if timed and not (0 < shortest <= longest and shortest * c <= ticks <= longest * c):
                    raise BenchError(f"{what}: rank {rank}: a site of {fn} with {c} calls took {ticks} ticks, "
                                     f"shortest {shortest}, longest {longest}")
                if not timed and (ticks, shortest, longest) != (0, 0, 0):
                    raise BenchError(f"{what}: rank {rank}: an untimed floor timed {fn}")
            if per:
                blocking = fn in ("MPI_Send", "MPI_Recv")
                want_hist[(fn, size_bin(per))] = (n, got[3] if blocking and timed else 0)
            if fn in SENDS:
                sends, sent = sends + n, sent + n * per
        if hist != want_hist:
            raise BenchError(f"{what}: rank {rank}: the size histogram holds {hist}, the calls made {want_hist}")
        if matrix != ({1 - rank: (sends, sent)} if sends else {}):
            raise BenchError(f"{what}: rank {rank}: the matrix holds {matrix}, the program sent {sends} messages "
                             f"of {sent} bytes in all to rank {1 - rank}")


def check_floor_trace(outdir: Path, text: str, kind: str, wrapped: dict[int, dict[str, int]], what: str) -> None:
    """The trace floor's records (kind 5), read from its files: one per call the program made, each
    with its bytes and tag and the other rank as the peer; the operations numbered 1, 2, ... in the
    order of their calls, each completed once, by its own record or within its call; each
    function's durations adding up to the ticks of its call sites."""
    import numpy as np

    told = {int(r): int(n) for r, n in TRACE_RE.findall(text)}
    for rank, calls in wrapped.items():
        try:
            rec = np.fromfile(outdir / f"floor-trace.{rank}", dtype=np.dtype(RECORD))
        except OSError as e:
            raise BenchError(f"{what}: rank {rank}: no trace floor file: {e}") from None
        if told.get(rank) != len(rec):
            raise BenchError(f"{what}: rank {rank}: the trace floor says it wrote {told.get(rank)} records, "
                             f"its file holds {len(rec)}")
        site_ticks: dict[str, int] = {}
        for r, name, _, _, _, ticks, _, _ in SITE_RE.findall(text):
            if int(r) == rank:
                site_ticks[name] = site_ticks.get(name, 0) + int(ticks)
        done = (rec["fn"] & RECORD_DONE) != 0
        fn = rec["fn"] & np.uint8(~(RECORD_DONE | RECORD_BOTH) & 0xFF)
        call, call_fn = rec[~done], fn[~done]
        for i, name in enumerate(FNS):
            mine = call[call_fn == i]
            want_bytes = 0 if name == "MPI_Irecv" else BYTES[kind].get(name, 0)
            want_tag = TAGS[kind].get(name, 0)
            if (len(mine) != calls.get(name, 0) or not (mine["bytes"] == want_bytes).all()
                    or not (mine["tag"] == want_tag).all()
                    or not (name == "MPI_Waitall" or (mine["peer"] == 1 - rank).all())):
                raise BenchError(f"{what}: rank {rank}: {len(mine)} records of {name}, the program made "
                                 f"{calls.get(name, 0)} calls of {want_bytes} bytes with tag {want_tag} "
                                 f"to or from rank {1 - rank}")
            if len(mine) and int(mine["dur"].sum(dtype=np.uint64)) != site_ticks.get(name):
                raise BenchError(f"{what}: rank {rank}: the records of {name} last {mine['dur'].sum()} ticks, "
                                 f"its call sites {site_ticks.get(name)}")
        started = call[call["op"] != 0]
        if not (started["op"] == np.arange(1, len(started) + 1)).all():
            raise BenchError(f"{what}: rank {rank}: operations not numbered 1, 2, ... in the order of their calls")
        completed = np.concatenate([rec["op"][done], started["op"][(started["fn"] & RECORD_BOTH) != 0]])
        if len(started) != calls.get("MPI_Isend", 0) + calls.get("MPI_Irecv", 0) or not (
                len(completed) == len(started) and (np.sort(completed) == started["op"]).all()):
            raise BenchError(f"{what}: rank {rank}: of {len(started)} operations started, "
                             f"{len(np.unique(completed))} completed ({len(completed)} completions)")
        got = rec[done & (fn == FNS.index("MPI_Irecv"))]
        if not ((got["bytes"] == BYTES[kind].get("MPI_Irecv", 0)).all() and (got["peer"] == 1 - rank).all()
                and (got["tag"] == TAGS[kind].get("MPI_Irecv", 0)).all() and (rec["dur"][done] == 0).all()):
            raise BenchError(f"{what}: rank {rank}: a receive's completion without its bytes, source or tag")


Check = Callable[[Path, str, dict[int, dict[str, int]], str], None]


def run(mpi: str, exe: Path, lib: Path, kind: str, pairs: int, seed: int, mode: str,
        settings: dict[str, str], outdir: Path, check: Check | None,
        traced: bool) -> tuple[list[tuple[float, float]], float | None]:
    """One mpirun: every pair's (plain, wrapped) seconds per unit and, when traced (mpilens in trace
    mode), the trace writer threads' CPU seconds per wrapped unit (None otherwise). check(outdir,
    kind, the calls the program made, what): the profile's or a floor's counts against them."""
    cmd = launcher(mpi, "core") + tool_env_args(mpi, lib, outdir, mode, settings)
    cmd += [str(exe), kind, str(pairs), "1", str(seed)]
    what = " ".join(cmd)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=base_env(mpi), timeout=600, cwd=outdir.parent)
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out: {what}") from None
    if r.returncode != 0:
        raise BenchError(f"failed (exit {r.returncode}): {what}\n{r.stdout}\n{r.stderr}")
    got = [(float(a), float(b)) for _, a, b in PAIR_RE.findall(r.stdout)]
    if len(got) != pairs:
        raise BenchError(f"{what}: {len(got)} pairs printed, {pairs} expected:\n{r.stdout}\n{r.stderr}")
    wrapped = {int(rank): name_counts(rest) for rank, rest in CALLS_RE.findall(r.stdout)}
    if sorted(wrapped) != [0, 1]:
        raise BenchError(f"{what}: no wrapped_calls lines:\n{r.stdout}")
    if check is not None:
        check(outdir, kind, wrapped, what)
    writer = None
    if traced:
        cpu = trace_size(outdir)[3]
        # units of the wrapped batches: half round trips (hop), messages (rate)
        units = 2 * wrapped[0]["MPI_Send"] if kind == "hop" else wrapped[0]["MPI_Isend"]
        writer = None if cpu is None else cpu / units
    shutil.rmtree(outdir, ignore_errors=True)
    return got, writer


def bench(mpi: str, libs: dict[str, Path], sets: list[str], mode: str, runs: int, pairs: int,
          tmp: Path, check: bool = True, floor: bool = False) -> dict:
    exe = compile_program(mpi, "paired")
    copies = copy_runtimes(mpi, libs, tmp)
    configs = [(name, s) for name in copies for s in sets]
    floors = compile_floors(mpi) if floor else {}
    configs += [(name, "-") for name in floors]  # a floor ignores MPILENS_* settings
    copies.update(floors)
    # per (runtime, setting, kind): every pair's (plain, wrapped) seconds, and per run its pairs
    data: dict[tuple[str, str, str], list[list[tuple[float, float]]]] = {
        (n, s, k): [] for n, s in configs for k in ("hop", "rate")}
    writer: dict[tuple[str, str, str], list[float]] = {key: [] for key in data}
    rng = random.Random(20261126)
    counter = 0
    for r in range(runs):
        jobs = [(n, s, k) for n, s in configs for k in ("hop", "rate")]
        rng.shuffle(jobs)
        for n, s, k in jobs:
            counter += 1
            outdir = tmp / f"run-{counter:04d}"
            if n in floors:
                how, traced = functools.partial(check_floor, floor_kind=FLOORS[n]), False
            else:
                how, traced = check_profile if check else None, "trace" in mode.split(",")
            got, w = run(mpi, exe, copies[n], k, pairs, rng.randrange(1 << 30), mode, parse_settings(s), outdir, how,
                         traced)
            data[(n, s, k)].append(got)
            if w is not None:
                writer[(n, s, k)].append(w)
        log(f"  {mpi}: run {r + 1}/{runs} done")
    rows = []
    for n, s in configs:
        row = {"runtime": n, "sha256": sha256(copies[n])[:12], "settings": s}
        for k in ("hop", "rate"):
            per_run = data[(n, s, k)]
            # hop: with / without (> 1 is slower); rate: kept, without / with per message
            ratio = (lambda a, b: b / a) if k == "hop" else (lambda a, b: a / b)
            ratios = [[ratio(a, b) for a, b in one] for one in per_run]
            pooled = [x for one in ratios for x in one]
            runs_med = [statistics.median(one) for one in ratios]
            lo, hi = two_level_ci(ratios)
            plain = statistics.median(a for one in per_run for a, _ in one)
            added = statistics.median(b - a for one in per_run for a, b in one)
            row[k] = {"median": statistics.median(pooled), "ci": [lo, hi], "runs": runs_med,
                      "plain_s": plain, "added_s": added, "pairs": len(pooled),
                      "plain_runs_s": [statistics.median(a for a, _ in one) for one in per_run]}
            if writer[(n, s, k)]:
                # the writer threads' CPU may have run in either kind of batch: the ratio with all
                # of it charged to the wrapped ones bounds the cost from above
                w = statistics.median(writer[(n, s, k)])
                wrapped = statistics.median(b for one in per_run for _, b in one)
                row[k]["writer_s"] = w
                row[k]["with_writer"] = (wrapped + w) / plain if k == "hop" else plain / (wrapped + w)
        rows.append(row)
    return {"mpi": mpi, "mode": mode, "runs": runs, "pairs": pairs, "rows": rows}


def table(res: dict) -> str:
    r0 = res["rows"][0]
    hops = [v * 1e6 for v in r0["hop"]["plain_runs_s"]]
    rates = [1 / v / 1e6 for v in r0["rate"]["plain_runs_s"]]
    out = [f"### {MPI_NAMES[res['mpi']]}: MPILENS_MODE={res['mode']}, {res['runs']} runs x {res['pairs']} pairs "
           f"per configuration; plain 8 B hop {r0['hop']['plain_s'] * 1e6:.3f} µs (runs {min(hops):.3f}–"
           f"{max(hops):.3f}), plain rate {1 / r0['rate']['plain_s'] / 1e6:.2f} M msgs/s (runs {min(rates):.2f}–"
           f"{max(rates):.2f}): medians of the plain batches", "",
           "| runtime | settings | 8 B hop, with / without (95 % CI) | added | runs' medians "
           "| message rate kept (95 % CI) | added per message | runs' medians |",
           "|---|---|---|---:|---|---|---:|---|"]
    notes = []
    for row in res["rows"]:
        h, m = row["hop"], row["rate"]
        out.append(
            f"| {row['runtime']} ({row['sha256']}) | {row['settings']} "
            f"| **{h['median']:.3f}** ({h['ci'][0]:.3f}–{h['ci'][1]:.3f}) | {h['added_s'] * 1e9:+.1f} ns "
            f"| {min(h['runs']):.3f}–{max(h['runs']):.3f} "
            f"| **{m['median']:.3f}** ({m['ci'][0]:.3f}–{m['ci'][1]:.3f}) | {m['added_s'] * 1e9:+.1f} ns "
            f"| {min(m['runs']):.3f}–{max(m['runs']):.3f} |")
        if "writer_s" in h and "writer_s" in m:
            notes.append(f"{row['runtime']} {row['settings']}: the trace writer threads took "
                         f"{h['writer_s'] * 1e9:.1f} ns of CPU per hop and {m['writer_s'] * 1e9:.1f} ns per "
                         f"message; charged in full to the wrapped batches: hop {h['with_writer']:.3f}, "
                         f"rate kept {m['with_writer']:.3f}.")
    return "\n".join(out + ([""] + notes if notes else []))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_comparison_args(p, "NAME=DIR holding libmpilens-<mpi>.so (default: now=build/lib)", lib_required=False)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--no-check", action="store_true",
                   help="do not compare the profile with the calls made (an experimental build that drops counts)")
    p.add_argument("--floor", action="store_true",
                   help="add bench/floor.c's shims: each call counted; counted and timed; counted with "
                        "bytes exact; the profile's attribution, untimed and timed; timed and traced (the "
                        "least any tool pays for each, checked against the calls made)")
    args = p.parse_args(argv)
    return run_comparison("paired", args, [f"now={ROOT / 'build' / 'lib'}"], lambda mpi, libs, sets, sub: bench(
        mpi, libs, sets, args.mode, args.runs, args.pairs, sub, not args.no_check, args.floor), table)


if __name__ == "__main__":
    sys.exit(main())
