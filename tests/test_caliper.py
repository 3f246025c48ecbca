"""`mpilens export caliper`: Caliper's json-split and .cali files, read by Hatchet's and Thicket's own
Caliper readers (the oracle), with the tree, calls and bytes the example programs make, and runs of
one program loading as one Thicket ensemble."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import mpilens
from conftest import MPILENS, ROOT, committed_run, example, job_env, launcher, run_example, sources
from mpilens import cli
from mpilens.exports import caliper
from mpilens.rundir import SCHEMA, Run

# llnl-hatchet 2025.2.0 and llnl-thicket 2026.1.0 (the last releases that accept pandas 3) still pass
# inplace=True and lists to DataFrame.from_dict, which pandas 3.1 deprecates: their warnings, not ours
pytestmark = [pytest.mark.filterwarnings("ignore:The inplace keyword:Warning"),
              pytest.mark.filterwarnings("ignore:Passing a .* to DataFrame.from_dict is deprecated:Warning")]

try:
    import caliperreader
    import hatchet as ht
    import thicket as th
except ImportError:  # the acceptance needs the real libraries, not stand-ins
    pytest.fail("llnl-hatchet, llnl-thicket or caliper-reader is not installed in the venv "
                "(pip install llnl-hatchet llnl-thicket)", pytrace=False)

FORMATS = [("json", ht.GraphFrame.from_caliper), ("cali", ht.GraphFrame.from_caliperreader)]
ENSEMBLE_READERS = {"json": th.Thicket.from_caliper, "cali": th.Thicket.from_caliperreader}


def export(run_dir: Path, out: Path) -> Path:
    """`mpilens export caliper RUN -o OUT`, in-process."""
    out.parent.mkdir(parents=True, exist_ok=True)
    assert cli.main(["export", "caliper", str(run_dir), "-o", str(out), "--quiet"]) == 0
    return out


def by_path(df, graph) -> dict[str, object]:
    """The rows of a Hatchet/Thicket dataframe (index reset) by node path, "main/ring/MPI_Send"
    (the json-split reader links children to parents only)."""
    paths: dict[int, str] = {}

    def walk(node, prefix: str) -> None:
        paths[id(node)] = f"{prefix}/{node.frame['name']}" if prefix else node.frame["name"]
        for child in node.children:
            walk(child, paths[id(node)])
    for root in graph.roots:
        walk(root, "")
    df = df.assign(path=df["node"].map(lambda nd: paths[id(nd)]))
    return {p: rows.sort_values("rank") for p, rows in df.groupby("path")}


def children(graph) -> dict[str, list[str]]:
    """Each node's children by name, the nodes by path."""
    out: dict[str, list[str]] = {}

    def walk(node, prefix: str) -> None:
        path = f"{prefix}/{node.frame['name']}" if prefix else node.frame["name"]
        out[path] = sorted(c.frame["name"] for c in node.children)
        for child in node.children:
            walk(child, path)
    for root in graph.roots:
        walk(root, "")
    return out


def column(rows, name: str) -> list:
    return [None if v != v else v for v in rows[name].tolist()]  # NaN as None


def check_times(nodes: dict, np: int) -> None:
    """Times as the readers give them add up: the exclusive times of a rank's nodes to main's
    inclusive time, a region's inclusive time to its own and its children's exclusive times."""
    total = [0.0] * np
    for rows in nodes.values():
        total = [t + v for t, v in zip(total, column(rows, "time"))]
    assert total == pytest.approx(column(nodes["main"], "time (inc)"))
    for path, rows in nodes.items():
        kids = [p for p in nodes if p.rsplit("/", 1)[0] == path and p != path]
        inner = [sum(column(nodes[k], "time (inc)")[r] for k in kids) for r in range(np)]
        assert [a + b for a, b in zip(column(rows, "time"), inner)] == pytest.approx(column(rows, "time (inc)")), path


# --------------------------------------------------------------------------------- ring.c
@pytest.fixture(params=sources())
def ring(request, tmp_path):
    """The ring example (tests/data/runs/runs.json: 4 ranks, 5 messages of 2048 bytes), committed
    or run now."""
    job = request.param.run("ring", tmp_path)
    assert job.example == "ring"
    return job


def test_ring_tree_calls_and_bytes_in_hatchet(ring, tmp_path):
    """ring.c: per rank N MPI_Send and N MPI_Recv of SIZE bytes in region "ring", one MPI_Allreduce of
    a double in "check"; each rank's row of each node, as both of Hatchet's Caliper readers read them."""
    n, size = (int(a) for a in ring.args)
    np = ring.np
    for fmt, reader in FORMATS:
        gf = reader(str(export(ring.rundir, tmp_path / f"ring.{fmt}")))
        assert gf.dataframe.index.names == ["node", "rank"]
        tree = children(gf.graph)
        assert tree["main"] == ["MPI_Comm_rank", "MPI_Comm_size", "check", "ring"], fmt
        assert tree["main/ring"] == ["MPI_Recv", "MPI_Send"] and tree["main/check"] == ["MPI_Allreduce"], fmt
        nodes = by_path(gf.dataframe.reset_index(), gf.graph)
        assert list(nodes["main/ring/MPI_Send"]["rank"]) == list(range(np))
        expect = {  # path: (Calls, Bytes sent, Bytes recv, Bytes sent (inc), Bytes recv (inc)), every rank
            "main": (1, 0, 0, n * size + 8, n * size + 8),
            "main/ring": (1, 0, 0, n * size, n * size),
            "main/ring/MPI_Send": (n, n * size, 0, n * size, 0),
            "main/ring/MPI_Recv": (n, 0, n * size, 0, n * size),
            "main/check": (1, 0, 0, 8, 8),
            "main/check/MPI_Allreduce": (1, 8, 8, 8, 8),
            "main/MPI_Comm_rank": (1, 0, 0, 0, 0),
        }
        for path, values in expect.items():
            for col, v in zip(("Calls", "Bytes sent", "Bytes recv", "Bytes sent (inc)", "Bytes recv (inc)"), values):
                assert column(nodes[path], col) == [v] * np, (fmt, path, col)
        check_times(nodes, np)
        assert all(t > 0 for t in column(nodes["main/ring/MPI_Send"], "time"))
        assert gf.default_metric == "time" and "time (inc)" in gf.inc_metrics and "Calls" in gf.exc_metrics
        assert "MPI_Send" in gf.tree(metric_column="time (inc)")
        meta = gf.metadata
        assert meta["jobsize"] == meta["mpi.world.size"] == np and meta["numhosts"] == 1, fmt
        assert meta["mpilens.mpi"] == ring.mpi and meta["mpilens.version"] == mpilens.__version__
        assert meta["mpilens.run"] == ring.rundir.name and meta["executable"] == "ring"
        assert meta["mpi_library"].startswith({"openmpi": "Open MPI", "mpich": "MPICH"}[ring.mpi])
        cmdline = meta["cmdline"] if fmt == "cali" else meta["cmdline"].strip("[]").split(",")  # .cali: parsed
        assert cmdline[-2:] == [str(n), str(size)] and cmdline[-3].endswith("/ring")
        assert isinstance(meta["launchdate"], int) and isinstance(meta["mpilens.profile"], int)
    # hatchet's own operations on it
    gf = ht.GraphFrame.from_caliper(str(tmp_path / "ring.json"))
    mpi_only = gf.filter(lambda row: row["name"].startswith("MPI_"), num_procs=1)
    assert sorted({nd.frame["name"] for nd in mpi_only.graph.traverse()}) == [
        "MPI_Allreduce", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Recv", "MPI_Send"]


@pytest.mark.mpi
def test_traffic_outside_regions_is_under_main(mpi, tmp_path):
    """traffic_p2p blocking REPS SIZE: a token ring without regions; rank r sends REPS messages of
    SIZE*(r+1) bytes with MPI_Send and receives REPS of its left neighbour's size, then one
    MPI_Barrier: all under main, and each rank's own bytes in its own row."""
    np, reps, size = 4, 5, 1000
    job = run_example(mpi, "traffic_p2p", np, tmp_path, ["blocking", str(reps), str(size)])
    for fmt, reader in FORMATS:
        gf = reader(str(export(job.rundir, tmp_path / f"p2p.{fmt}")))
        nodes = by_path(gf.dataframe.reset_index(), gf.graph)
        assert "MPI_Send" in children(gf.graph)["main"] and "main/MPI_Send" in nodes
        assert column(nodes["main/MPI_Send"], "Calls") == [reps] * np
        assert column(nodes["main/MPI_Send"], "Bytes sent") == [reps * size * (r + 1) for r in range(np)], fmt
        assert column(nodes["main/MPI_Recv"], "Bytes recv") == [reps * size * ((r - 1) % np + 1) for r in range(np)]
        assert column(nodes["main/MPI_Barrier"], "Calls") == [1] * np
        assert column(nodes["main"], "Bytes sent (inc)") == [reps * size * (r + 1) for r in range(np)]
        check_times(nodes, np)


# ------------------------------------------------------------------------------------ ensembles
def docs_snippet() -> str:
    """The Python block of docs/compare.md that loads the exported runs (it names its test)."""
    page = (ROOT / "docs" / "compare.md").read_text()
    m = re.search(r"<!-- tests/test_caliper.py runs this block -->\n```python\n(.*?)```", page, re.S)
    assert m, "docs/compare.md lost the Caliper snippet"
    return m.group(1)


def run_docs_snippet(folder: Path, monkeypatch) -> dict:
    """Run the snippet where it expects its files (cali/a-001.json, ...); return its variables."""
    monkeypatch.chdir(folder)
    scope: dict = {}
    exec(compile(docs_snippet(), "docs/compare.md", "exec"), scope)
    return scope


def check_ensemble(tk, runs: list[Path], np: int) -> None:
    """One ensemble of the runs: a profile each, their metadata, one tree."""
    assert len(tk.profile) == len(runs) and tk.dataframe.index.names == ["node", "profile", "rank"]
    md = tk.metadata
    assert len(md) == len(runs) and set(md["jobsize"]) == {np} and set(md["mpilens.version"]) == {mpilens.__version__}
    assert md["mpilens.profile"].is_unique  # every run its own profile
    assert sorted(md["mpilens.run"]) == sorted(r.name for r in runs)
    assert sorted(md["launchdate"]) == sorted(json.loads((r / "meta.json").read_text())["started_unix_s"] for r in runs)
    assert set(md["executable"]) == {json.loads((runs[0] / "meta.json").read_text())["program"].rsplit("/", 1)[1]}


@pytest.fixture(params=sources("openmpi"))
def ensemble(request, tmp_path):
    """Three runs of the imbalance example on 3 ranks, 3 steps (scripts/make-test-runs.py), committed
    or run now."""
    out = []
    for i in (1, 2, 3):
        (tmp_path / f"job{i}").mkdir()
        job = request.param.run(f"ensemble{i}", tmp_path / f"job{i}")
        assert (job.example, job.np, job.args) == ("imbalance", 3, ["3", "1000"])
        out.append(job.rundir)
    return out


def test_three_runs_are_one_thicket(ensemble, tmp_path, monkeypatch):
    """imbalance.c 3 1000 on 3 ranks: per step a region "force" (work counter "atoms" += 1000 * w, w
    = 2 on the last rank, 1 elsewhere) and a region "sync" with one MPI_Sendrecv of 1 KiB and one
    MPI_Allreduce of a double; each of Thicket's Caliper readers makes one ensemble of the three."""
    steps, np = 3, 3
    for fmt, reader in ENSEMBLE_READERS.items():
        files = [str(export(run, tmp_path / fmt / f"a-{i:03d}.{fmt}")) for i, run in enumerate(ensemble, 1)]
        tk = reader(files, disable_tqdm=True)
        check_ensemble(tk, ensemble, np)
        tree = children(tk.graph)
        assert tree["main"] == ["MPI_Comm_rank", "MPI_Comm_size", "force", "sync"] and tree["main/force"] == []
        assert tree["main/sync"] == ["MPI_Allreduce", "MPI_Sendrecv"]
        df = tk.dataframe.reset_index()
        nodes = by_path(df, tk.graph)
        for profile in tk.profile:
            mine = {p: rows[rows["profile"] == profile] for p, rows in nodes.items()}
            assert column(mine["main/sync/MPI_Sendrecv"], "Calls") == [steps] * np
            assert column(mine["main/sync/MPI_Sendrecv"], "Bytes sent") == [steps * 1024] * np
            assert column(mine["main/sync/MPI_Sendrecv"], "Bytes recv") == [steps * 1024] * np
            assert column(mine["main/sync/MPI_Allreduce"], "Bytes sent") == [steps * 8] * np
            assert column(mine["main/force"], "Calls") == [steps] * np  # visits
            assert column(mine["main/force"], "counter:atoms") == [steps * 1000.0 * (2 if r == np - 1 else 1)
                                                                   for r in range(np)]
            check_times(mine, np)
    # the docs' snippet on the json-split files of a folder
    (tmp_path / "docs").mkdir()
    (tmp_path / "json").rename(tmp_path / "docs" / "cali")
    scope = run_docs_snippet(tmp_path / "docs", monkeypatch)
    check_ensemble(scope["tk"], ensemble, np)
    assert scope["gf"].metadata["mpilens.run"] == ensemble[0].name


@pytest.mark.mpi
def test_runs_of_mpilens_repeat_and_the_docs_snippet(mpi, tmp_path, monkeypatch):
    """The recipe of docs/compare.md: `mpilens repeat -n 3` of ring.c, each run exported into one
    folder, and the docs' Python block on it."""
    n, size, np = 10, 4096, 4
    reps = tmp_path / "reps"
    p = subprocess.run([str(MPILENS), "repeat", "-n", "3", "-o", str(reps), "--mpi", mpi, "--",
                        *launcher(mpi, np), str(example(mpi, "ring")), str(n), str(size)],
                       capture_output=True, text=True, env=job_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    runs = sorted(reps.glob("a-*"))
    for run in runs:
        export(run, tmp_path / "cali" / f"{run.name}.json")
    scope = run_docs_snippet(tmp_path, monkeypatch)
    tk = scope["tk"]
    check_ensemble(tk, runs, np)
    assert set(tk.metadata["mpilens.mpi"]) == {mpi}
    sends = scope["df"][scope["df"]["name"] == "MPI_Send"]
    assert len(sends) == 3 * np and set(sends["Calls"]) == {n} and set(sends["Bytes sent"]) == {n * size}
    assert "MPI_Allreduce" in scope["gf"].tree(metric_column="time (inc)")


# ------------------------------------------------------------------------------------ edge cases
def test_a_rank_without_data_and_names_to_escape(tmp_path):
    """A rank that left no data has no values (NaN in Hatchet), and names with Caliper's separators
    survive the .cali format; the file is written without meta.json."""
    def fn(calls, t, sent):
        return {"class": "p2p", "calls": calls, "time_s": t, "min_s": t, "max_s": t, "bytes_sent": sent,
                "bytes_recv": [0, None]}
    p = {"schema": SCHEMA, "complete": False, "nranks": 2, "wall_time_s": 2.0,
         "ranks": [{"rank": 0, "wall_time_s": 2.0, "mpi_time_s": 0.5}, {"rank": 1, "wall_time_s": None}],
         "functions": {"MPI_Send": fn([3, None], [0.5, None], [24, None])}, "matrix": [], "message_sizes": {},
         "counters": {},
         "regions": [{"name": "a,b=c\\d", "visits": [1, None], "time_s": [1.0, None], "counters": {},
                      "functions": {"MPI_Send": fn([3, None], [0.5, None], [24, None])}, "regions": []}]}
    run = Run(tmp_path / "hand", None, p, "profile.json")
    caliper.write(run, tmp_path / "hand.json")
    caliper.write(run, tmp_path / "hand.cali")
    for fmt, reader in FORMATS:
        gf = reader(str(tmp_path / f"hand.{fmt}"))
        nodes = by_path(gf.dataframe.reset_index(), gf.graph)
        assert set(nodes) == {"main", "main/a,b=c\\d", "main/a,b=c\\d/MPI_Send"}, fmt
        assert column(nodes["main/a,b=c\\d/MPI_Send"], "Calls") == [3, None]
        assert column(nodes["main/a,b=c\\d/MPI_Send"], "Bytes sent") == [24, None]
        assert column(nodes["main"], "time") == [1.0, None]  # 2 - 1 (the region), rank 1 unknown
        assert gf.metadata["mpilens.complete"] in (False, "false") and "launchdate" not in gf.metadata
    records, globals_ = caliperreader.read_caliper_contents(str(tmp_path / "hand.cali"))
    assert {tuple(r["path"]) for r in records if isinstance(r["path"], list)} == {
        ("main", "a,b=c\\d"), ("main", "a,b=c\\d", "MPI_Send")}
    assert globals_["mpilens.profile"] == str(caliper.profile_id(run))


def test_profile_id_names_the_run_not_the_copy(tmp_path):
    """The same run exported from two copies has one profile id; two runs have two."""
    ids = []
    for name, copy in (("ensemble1-openmpi", "x"), ("ensemble1-openmpi", "y"), ("ensemble2-openmpi", "z")):
        (tmp_path / copy).mkdir()
        ids.append(caliper.run_globals(mpilens.load(committed_run(name, tmp_path / copy).rundir))["mpilens.profile"])
    assert ids[0] == ids[1] != ids[2]
