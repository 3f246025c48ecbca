"""Hatchet and Thicket exports: Hatchet (llnl-hatchet) reads what `mpilens export hatchet` writes and
what mpilens.to_hatchet returns, and its totals equal the profile's; Thicket makes an ensemble."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import mpilens
from conftest import MPILENS, job_env, sources
from mpilens import export_hatchet as eh
from mpilens.rundir import SCHEMA, Run

# llnl-hatchet 2025.2.0 and llnl-thicket 2026.1.0 (the last releases that accept pandas 3) still pass
# inplace=True to pandas, which pandas 3.1 deprecates: their warnings, not ours
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:Warning")

try:
    import hatchet as ht
except ImportError:  # the acceptance needs the real library, not a stand-in
    pytest.fail("llnl-hatchet is not installed in the venv (pip install llnl-hatchet llnl-thicket)",
                pytrace=False)


def totals_match(gf, profile: dict) -> None:
    """Hatchet's view of a run adds up to the profile: wall time per rank, and per MPI function the
    time, calls and bytes per rank summed over the nodes where it was called."""
    df = gf.dataframe.reset_index()
    n = profile["nranks"]
    root = df[df["name"] == eh.ROOT_NAME]
    assert list(root["time (inc)"]) == pytest.approx([r["wall_time_s"] for r in profile["ranks"]])
    # exclusive times of all nodes add up to the wall time of each rank
    assert list(df.groupby("rank")["time"].sum()) == pytest.approx([r["wall_time_s"] for r in profile["ranks"]])
    fn = df[df["node"].map(lambda nd: nd.frame["type"]) == "function"]
    for name, f in profile["functions"].items():
        rows = fn[fn["name"] == name].groupby("rank")
        for key, col in (("time_s", "time"), ("calls", "calls"), ("bytes_sent", "bytes_sent"),
                         ("bytes_recv", "bytes_recv")):
            got = rows[col].sum()
            assert [got.get(r, 0.0) for r in range(n)] == pytest.approx(f[key]), (name, key)
    # calls (inc) of the root: every MPI call of the rank
    assert list(root["calls (inc)"]) == pytest.approx(
        [sum(f["calls"][r] for f in profile["functions"].values()) for r in range(n)])


@pytest.fixture(scope="module", params=sources("openmpi"))
def runs(request, tmp_path_factory):
    """Three runs of the imbalance example on 3 ranks (regions, MPI calls in and outside regions,
    counters; scripts/make-test-runs.py)."""
    out = []
    for i in (1, 2, 3):
        job = request.param.run(f"ensemble{i}", tmp_path_factory.mktemp(f"hatchet{i}"))
        assert (job.example, job.np, job.args) == ("imbalance", 3, ["3", "1000"])
        out.append(job.rundir)
    return out


def test_export_file_read_by_hatchet(runs, tmp_path):
    f = tmp_path / "run.json"
    p = subprocess.run([str(MPILENS), "export", "hatchet", str(runs[0]), "-o", str(f)], capture_output=True,
                       text=True, env=job_env())
    assert p.returncode == 0, p.stderr
    assert "from_json" in p.stdout
    gf = ht.GraphFrame.from_json(f.read_text())
    profile = mpilens.load(runs[0]).profile
    totals_match(gf, profile)
    assert gf.dataframe.index.names == ["node", "rank"]
    # the tree: main -> force, sync -> MPI functions
    names = {nd.frame["name"]: nd for nd in gf.graph.traverse()}
    assert [c.frame["name"] for c in names["sync"].children] == ["MPI_Allreduce", "MPI_Sendrecv"]
    assert names["force"].parents[0].frame["name"] == "main" and names["force"].frame["type"] == "region"
    assert "MPI_Comm_rank" in [c.frame["name"] for c in names["main"].children]  # called outside regions
    assert "MPI_Sendrecv" in gf.tree(metric_column="time (inc)", rank=1)


def test_to_hatchet_and_literal(runs, tmp_path):
    gf = mpilens.to_hatchet(runs[1])
    profile = mpilens.load(runs[1]).profile
    totals_match(gf, profile)
    assert gf.metadata["nranks"] == 3 and gf.metadata["mpi"] == "openmpi"
    df = gf.dataframe.reset_index()
    force = df[df["name"] == "force"].sort_values("rank")
    assert list(force["counter:atoms"]) == [3000.0, 3000.0, 6000.0]  # rank 2 (the last) does 2x
    assert list(force["visits"]) == [3, 3, 3]
    # Hatchet's own machinery works on it
    gf.drop_index_levels()
    assert gf.dataframe.loc[[n for n in gf.graph.traverse() if n.frame["name"] == "main"][0], "time (inc)"] == \
        pytest.approx(sum(r["wall_time_s"] for r in profile["ranks"]) / 3)
    lit = tmp_path / "lit.json"
    subprocess.run([str(MPILENS), "export", "hatchet", str(runs[1]), "-o", str(lit), "--format", "literal"],
                   check=True, capture_output=True, env=job_env())
    gl = ht.GraphFrame.from_literal(json.loads(lit.read_text()))
    main = gl.dataframe[gl.dataframe["name"] == "main"]
    assert float(main["time (inc)"].iloc[0]) == pytest.approx(sum(r["wall_time_s"] for r in profile["ranks"]) / 3)


def test_to_thicket(runs):
    tk = mpilens.to_thicket(runs)
    assert len(tk.profile) == 3
    assert sorted(tk.metadata["mpilens.run"]) == sorted(str(r) for r in runs)
    df = tk.dataframe.reset_index()
    assert set(df["rank"]) == {0, 1, 2}
    for run in runs:
        prof = mpilens.load(run).profile
        mine = df[df["profile"] == tk.metadata.index[list(tk.metadata["mpilens.run"]).index(str(run))]]
        main = mine[mine["name"] == "main"].sort_values("rank")
        assert list(main["time (inc)"]) == pytest.approx([r["wall_time_s"] for r in prof["ranks"]])


def test_tree_arithmetic_on_a_hand_made_profile():
    """Nested regions, a function called both inside and outside regions, a missing rank."""
    def fn(calls, t):
        return {"class": "p2p", "calls": calls, "time_s": t, "min_s": t, "max_s": t, "bytes_sent": [8 * (c or 0) for c in calls],
                "bytes_recv": [0, 0]}
    p = {"schema": SCHEMA, "complete": True, "nranks": 2, "wall_time_s": 10.0,
         "ranks": [{"rank": 0, "wall_time_s": 10.0, "mpi_time_s": 4.0}, {"rank": 1, "wall_time_s": 9.0, "mpi_time_s": 3.0}],
         "functions": {"MPI_Send": fn([5, 4], [3.0, 2.0]), "MPI_Barrier": fn([1, 1], [1.0, 1.0])},
         "matrix": [], "message_sizes": {},
         "counters": {"atoms": {"kind": "sum", "values": [10.0, 20.0]}},
         "regions": [{"name": "solve", "visits": [1, 1], "time_s": [6.0, 5.0], "counters": {},
                      "functions": {"MPI_Send": fn([1, 1], [1.0, 0.5])},
                      "regions": [{"name": "halo", "visits": [2, 2], "time_s": [2.5, 2.0], "regions": [],
                                   "counters": {"atoms": {"kind": "sum", "values": [4.0, 5.0]}},
                                   "functions": {"MPI_Send": fn([3, 2], [1.5, 1.0])}}]}]}
    tree = eh.build_tree(p)
    by_path = {}
    for nd in tree:
        path, up = [nd.name], nd.parent
        while up is not None:
            path.insert(0, tree[up].name)
            up = tree[up].parent
        by_path["/".join(path)] = nd
    assert set(by_path) == {"main", "main/MPI_Barrier", "main/MPI_Send", "main/solve", "main/solve/MPI_Send",
                            "main/solve/halo", "main/solve/halo/MPI_Send"}
    assert by_path["main/MPI_Send"].metrics["time"] == [0.5, 0.5]  # 3 - 1 - 1.5, 2 - 0.5 - 1
    assert by_path["main/MPI_Send"].metrics["calls"] == [1.0, 1.0]
    assert by_path["main/solve/halo"].metrics["time"] == [1.0, 1.0]  # 2.5 - 1.5, 2 - 1
    assert by_path["main/solve"].metrics["time"] == [2.5, 2.5]  # 6 - 1 - 2.5, 5 - 0.5 - 2
    assert by_path["main"].metrics["time"] == [2.5, 2.5]  # 10 - 0.5 - 1 - 6, 9 - 0.5 - 1 - 5
    assert by_path["main"].metrics["calls (inc)"] == [6.0, 5.0]
    assert by_path["main"].metrics["counter:atoms"] == [6.0, 15.0]  # outside regions: 10 - 4, 20 - 5
    gf = eh.to_hatchet(Run(Path("/hand"), None, p, "profile.json"))
    totals_match(gf, p)
    doc = eh.to_dict(Run(Path("/hand"), None, p, "profile.json"))
    totals_match(ht.GraphFrame.from_json(json.dumps(doc)), p)
