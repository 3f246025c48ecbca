"""`mpilens imbalance`: the formulas on hand-made profiles, and a real run of examples/c/imbalance.c
with a known injected imbalance (one rank does twice the work), a work counter and an efficiency."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from conftest import MPILENS, job_env, sources
from mpilens import imbalance as im
from mpilens.rundir import SCHEMA, Run


def profile(wall: list[float], mpi: list[float], counters: dict, regions: list | None = None) -> dict:
    n = len(wall)
    return {"schema": SCHEMA, "complete": True, "nranks": n, "wall_time_s": max(wall),
            "ranks": [{"rank": r, "host": "h", "wall_time_s": wall[r], "mpi_time_s": mpi[r]} for r in range(n)],
            "functions": {}, "matrix": [], "message_sizes": {}, "counters": counters, "regions": regions or []}


def region(name: str, time: list[float], mpi: list[float] | None = None, counters: dict | None = None,
           regions: list | None = None) -> dict:
    n = len(time)
    funcs = {}
    if mpi is not None:
        funcs["MPI_Allreduce"] = {"class": "collective", "calls": [1] * n, "time_s": mpi, "min_s": mpi, "max_s": mpi,
                                  "bytes_sent": [8] * n, "bytes_recv": [8] * n}
    return {"name": name, "visits": [1] * n, "time_s": time, "functions": funcs, "counters": counters or {},
            "regions": regions or []}


def run_of(p: dict) -> Run:
    return Run(Path("/hand-made"), None, p, "profile.json")


def test_formulas():
    # loads 1, 1, 1, 2 (wall 3 each, MPI 2, 2, 2, 1): one rank with twice the work
    p = profile([3.0] * 4, [2.0, 2.0, 2.0, 1.0], {"atoms": {"kind": "sum", "values": [10, 10, 10, 20]}})
    a = im.analyze(run_of(p))
    s = a.scope("run", "whole run")
    assert s.load.mean == pytest.approx(1.25)
    assert s.load.imbalance == pytest.approx(0.6)  # (2 - 1.25) / 1.25 = (P - 1) / (P + 1)
    assert s.load.max_over_mean == pytest.approx(1.6)
    assert s.load.max_rank == 3 and s.load.excess == pytest.approx(1.0)  # +100 % over the others
    assert s.correlation["atoms"] == pytest.approx(1.0)
    assert s.work_imbalance["atoms"] == pytest.approx(0.6)
    assert s.adjusted is None and a.efficiency_counter is None


def test_efficiency_adjustment_seed_eq_4_4():
    # rank 1 has efficiency 0.5: it takes twice as long for the same work (measured 1, 2, 1, 2);
    # adjusted = time x efficiency = 1, 1, 1, 2 follows the work 1, 1, 1, 2 exactly
    p = profile([3.0] * 4, [2.0, 1.0, 2.0, 1.0], {"atoms": {"kind": "sum", "values": [1, 1, 1, 2]},
                                                  "efficiency": {"kind": "last", "values": [1.0, 0.5, 1.0, 1.0]}})
    a = im.analyze(run_of(p))
    s = a.scope("run", "whole run")
    assert a.efficiency_counter == "efficiency"
    assert s.load.imbalance == pytest.approx(1 / 3)
    assert s.correlation["atoms"] == pytest.approx(0.5773502691896258)  # 1 / sqrt(3)
    assert s.adjusted.values == pytest.approx([1.0, 1.0, 1.0, 2.0])
    assert s.adjusted.imbalance == pytest.approx(0.6) and s.adjusted.max_rank == 3
    assert s.adjusted_correlation["atoms"] == pytest.approx(1.0)
    text = im.render_text(a)
    assert "Adj. imbalance" in text and "60.0%" in text


def test_regions_inherit_efficiency_and_sum_work_over_subregions():
    eff_run = {"kind": "last", "values": [0.5, 0.5, 0.5]}
    inner = region("kernel", [1.0, 2.0, 3.0], counters={"atoms": {"kind": "sum", "values": [1, 2, 3]},
                                                        "efficiency": {"kind": "last", "values": [1.0, None, 0.25]}})
    outer = region("step", [2.0, 3.0, 4.0], mpi=[0.5, 0.5, 0.5], regions=[inner],
                   counters={"atoms": {"kind": "sum", "values": [1, 1, 1]}})
    p = profile([5.0] * 3, [1.0] * 3, {"atoms": {"kind": "sum", "values": [2, 3, 4]}, "efficiency": eff_run}, [outer])
    a = im.analyze(run_of(p))
    step = a.scope("region", "step")
    assert step.load.values == pytest.approx([1.5, 2.5, 3.5])  # time - MPI inside
    assert step.work["atoms"] == [2.0, 3.0, 4.0]  # own + subregion
    assert step.efficiency == [0.5, 0.5, 0.5]  # the run's
    kernel = a.scope("region", "step/kernel")
    assert kernel.efficiency == [1.0, 0.5, 0.25]  # rank 1 set none there: the enclosing value
    assert kernel.adjusted.values == pytest.approx([1.0, 1.0, 0.75])
    assert a.scope("function", "step/MPI_Allreduce").quantity == "time"


def test_bad_and_missing_efficiency():
    p = profile([2.0] * 3, [1.0] * 3, {"efficiency": {"kind": "last", "values": [0.5, 1.5, None]}})
    a = im.analyze(run_of(p))
    assert a.scope("run", "whole run").adjusted is None
    assert any("outside [0, 1] on rank 1" in n for n in a.notes)
    p = profile([2.0] * 3, [1.0] * 3, {"efficiency": {"kind": "last", "values": [0.5, None, 1.0]}})
    a = im.analyze(run_of(p))
    s = a.scope("run", "whole run")
    assert s.adjusted.values == [0.5, None, 1.0] and s.adjusted.n == 2  # missing is missing, not zero
    assert any("1 ranks set no efficiency" in n for n in a.notes)
    assert im.analyze(run_of(p), work=["atoms"]).notes[0].startswith("work counter 'atoms' was not recorded")


def test_pearson_needs_three_ranks():
    assert im.pearson([1.0, 2.0], [1.0, 2.0]) is None
    assert im.pearson([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) is None
    assert im.pearson([1.0, 2.0, None, 4.0], [2.0, 4.0, 1.0, 8.0]) == pytest.approx(1.0)


def imbalance_json(rundir: Path, *extra: str) -> dict:
    p = subprocess.run([str(MPILENS), "imbalance", str(rundir), "--json", *extra], capture_output=True, text=True,
                       env=job_env())
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def forced(stdout: str, np: int) -> list[float]:
    """Each rank's "force" seconds as it measured them itself (examples/c/imbalance.c prints them)."""
    lines = [line.split() for line in stdout.splitlines() if line.startswith("imbalance: rank ")]
    times = {int(w[2]): float(w[4]) for w in lines}
    assert sorted(times) == list(range(np)), stdout
    return [times[r] for r in range(np)]


def imbalance_of(values: list[float]) -> float:
    """(max - mean) / mean, the seed's imbalance."""
    mean = sum(values) / len(values)
    return (max(values) - mean) / mean


def check_load(load: dict, measured: list[float], steps: int) -> list[float]:
    """The region's time per rank is what the rank measured itself inside it, and at most a little
    more: the region's own calls, and the CPU taken from the rank between them and its clock (a
    few ms on a loaded machine, under 5 ms a step); 0.1 ms less at most, for the two clocks' rates
    (the runtime's tick counter, the program's CLOCK_MONOTONIC). The figures are those of these
    times (test_formulas holds the formulas to hand-made profiles). Returns the times."""
    values = load["values"]
    assert len(values) == len(measured)
    for r, (tool, own) in enumerate(zip(values, measured)):
        assert own - 1e-4 <= tool <= own + steps * 0.005, (r, tool, own)
    assert load["slowest_rank"] == max(range(len(values)), key=values.__getitem__)
    assert load["imbalance"] == pytest.approx(imbalance_of(values), rel=1e-9)
    assert load["mean"] == pytest.approx(sum(values) / len(values), rel=1e-9)
    return values


# Open MPI yields the CPU while it waits when there are more ranks than cores, so 4 ranks on this
# machine's 2 cores measure the work; MPICH spins, and delays the sleeping ranks: it gets 2 ranks
# (scripts/make-test-runs.py). A sleep ends when the kernel wakes the rank, later on a busy machine:
# the times come from the ranks' own clocks, the construction gives only the least they can be.
@pytest.mark.parametrize("src", sources())
def test_injected_imbalance(src, tmp_path):
    job = src.run("imbalance", tmp_path)
    np = job.np
    steps, unit_us, heavy = map(int, job.args)
    assert f"imbalance: {np} ranks, heavy rank {heavy}" in job.stdout
    measured = forced(job.stdout, np)
    # from the construction: rank `heavy` sleeps 2 units per step, the others 1, and a sleep is never shorter
    units = [2 if r == heavy else 1 for r in range(np)]
    assert all(t >= u * steps * unit_us * 1e-6 for t, u in zip(measured, units)), measured
    doc = imbalance_json(job.rundir, "--work", "atoms")
    scopes = {(s["kind"], s["name"]): s for s in doc["scopes"]}
    force = scopes[("region", "force")]
    load = force["load"]
    values = check_load(load, measured, steps)
    slowest = load["slowest_rank"]
    others = [t for r, t in enumerate(values) if r != slowest]
    assert load["excess_over_others"] == pytest.approx(values[slowest] / statistics.median(others) - 1, rel=1e-9)
    assert force["work"]["atoms"] == [1000.0 * steps * u for u in units]
    if np >= 3:  # work and time go together as far as the times say
        assert force["correlation"]["atoms"] == pytest.approx(im.pearson(values, units), rel=1e-9)
    else:
        assert force["correlation"]["atoms"] is None  # two ranks: r would be +-1 whatever the data
    # efficiency 1 everywhere: the adjusted figures equal the measured ones
    assert force["adjusted"]["imbalance"] == pytest.approx(load["imbalance"])


@pytest.mark.parametrize("src", sources("openmpi"))
def test_efficiency_adjusted_real_run(src, tmp_path):
    """Rank 1 runs at efficiency 0.5 (takes twice as long for its work), rank 3 has twice the work:
    times 1, 2, 1, 2 per unit as constructed (the ranks' own clocks say how long they took);
    adjusted times 1, 1, 1, 2 follow the atoms counter."""
    job = src.run("imbalance_efficiency", tmp_path)
    assert (job.np, job.args[2:]) == (4, ["3", "1", "0.5"])
    steps = int(job.args[0])
    measured = forced(job.stdout, job.np)
    doc = imbalance_json(job.rundir)
    assert doc["efficiency_counter"] == "efficiency" and doc["work_counters"] == ["atoms"]
    force = next(s for s in doc["scopes"] if s["name"] == "force")
    efficiency = [1.0, 0.5, 1.0, 1.0]
    assert force["efficiency"] == efficiency
    values = check_load(force["load"], measured, steps)
    adjusted = [t * e for t, e in zip(values, efficiency)]
    assert force["adjusted"]["values"] == pytest.approx(adjusted, rel=1e-9)
    assert force["adjusted"]["imbalance"] == pytest.approx(imbalance_of(adjusted), rel=1e-9)
    assert force["adjusted"]["slowest_rank"] == max(range(4), key=adjusted.__getitem__)
    # the adjusted times follow the work (1, 1, 1, 2 units) as far as the times say
    assert force["adjusted_correlation"]["atoms"] == pytest.approx(im.pearson(adjusted, [1, 1, 1, 2]), rel=1e-9)
    text = subprocess.run([str(MPILENS), "imbalance", str(job.rundir)], capture_output=True, text=True,
                          env=job_env()).stdout
    assert "region force (load)" in text and "adj. r(atoms)" in text
