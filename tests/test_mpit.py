"""MPI_T: listing the variables of each MPI, setting cvars (globally and per named communicator)
and reading them back in the application, refusing bad input, pvar series (present on Open MPI,
absent on this MPICH), the recommendation rules and `mpilens tune`, with real mpirun jobs."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import MPILENS, example, job_env, launcher, mpilens_run, mpirun, run_example

# A cvar each MPI lets mpilens set globally, a value, and one set when a communicator is named.
GLOBAL = {"openmpi": ("btl_vader_eager_limit", "4096", "65536"),
          "mpich": ("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", "69632", "139264")}
PER_COMM = {"openmpi": ("btl_vader_fbox_threshold", "16", "8"),
            "mpich": ("MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD", "5", "9")}


def mpilens(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(MPILENS), *args], env=job_env(), capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"mpilens {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


# ------------------------------------------------------------------------------------- list
def test_list_openmpi_has_eager_cvars_and_ob1_pvars():
    doc = json.loads(mpilens("mpit", "list", "--mpi", "openmpi", "--json").stdout)
    assert doc["counts"]["cvars"] > 500 and doc["counts"]["pvars"] > 0
    cv = {v["name"]: v for v in doc["cvars"]}
    for name in ("btl_vader_eager_limit", "btl_tcp_eager_limit"):
        assert cv[name]["datatype"] == "MPI_UNSIGNED_LONG" and cv[name]["bind"] == "none"
        assert int(cv[name]["value"]) > 0
    assert cv["btl_vader_eager_limit"]["scope"] == "readonly"
    pv = {v["name"]: v for v in doc["pvars"]}
    for name in ("pml_ob1_unexpected_msgq_length", "pml_ob1_posted_recvq_length"):
        assert pv[name]["class"] == "size" and pv[name]["bind"] == "communicator"
    text = mpilens("mpit", "list", "--mpi", "openmpi", "--match", "eager_limit").stdout
    assert text.startswith("Open MPI v4") and "btl_vader_eager_limit" in text and " 0 pvars" in text.splitlines()[0]


def test_list_mpich_has_eager_cvars_and_reports_pvars_absent():
    doc = json.loads(mpilens("mpit", "list", "--mpi", "mpich", "--json").stdout)
    assert doc["counts"]["cvars"] > 100
    cv = {v["name"]: v for v in doc["cvars"]}
    assert cv["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"]["datatype"] == "MPI_INT"
    assert cv["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"]["value"] == "131072"
    assert cv["MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE"]["value"] == "69632"
    assert doc["counts"]["pvars"] == 0  # Debian's MPICH is built without --enable-mpit-pvars
    text = mpilens("mpit", "list", "--mpi", "mpich", "--pvars").stdout
    assert "0 pvars" in text.splitlines()[0] and "none (MPICH builds them only with --enable-mpit-pvars)" in text


# ------------------------------------------------------------------------------------- cvars
def test_cvars_set_globally_and_per_communicator_are_read_back(mpi, tmp_path):
    name, old, new = GLOBAL[mpi]
    cname, cold, cnew = PER_COMM[mpi]
    cvars = f"{name}={new}"
    if mpi == "openmpi":
        cvars += ",btl=self,vader"  # a value with a comma stays one value
    job = mpirun(mpi, 2, [str(example(mpi, "mpit_readback")), name, cname], tmp_path,
                 settings={"MPILENS_CVARS": cvars, "MPILENS_COMM_CVARS": f"solver:{cname}={cnew}"})
    lines = job.stdout.splitlines()
    assert f"init {name}={new}" in lines            # the application sees the new value through MPI_T
    assert f"init {cname}={cold}" in lines          # not yet: the communicator has no name
    assert f"named {cname}={cnew}" in lines         # applied when MPI_Comm_set_name named it
    meta = json.loads((job.rundir / "meta.json").read_text())
    got = {(c["name"], c.get("communicator")): c for c in meta["cvars_set"]}
    g = got[(name, None)]
    assert (g["old"], g["new"], g["when"]) == (old, new, "MPI_Init")
    assert g["via"] == ("environment OMPI_MCA_btl_vader_eager_limit" if mpi == "openmpi" else "MPI_T_cvar_write")
    c = got[(cname, "solver")]
    assert (c["old"], c["new"], c["when"]) == (cold, cnew, "MPI_Comm_set_name")
    if mpi == "openmpi":
        assert got[("btl", None)]["new"] == "self,vader"
    text = mpilens("mpit", "show", str(job.rundir)).stdout
    assert f"{name}: {old} -> {new} (at MPI_Init)" in text
    report = mpilens("report", str(job.rundir)).stdout
    assert f"MPI_T cvar: {name} {old} -> {new}" in report
    assert f"MPI_T cvar: {cname} {cold} -> {cnew} when communicator 'solver' was named" in report


BAD = [
    ("openmpi", "MPILENS_CVARS", "btl_vader_eagr_limit=65536",
     "MPILENS_CVARS: btl_vader_eagr_limit is not a control variable of Open MPI; did you mean btl_vader_eager_limit?"),
    ("openmpi", "MPILENS_CVARS", "dl_dlopen_major_version=9", "dl_dlopen_major_version is read-only (MPI_T scope constant)"),
    ("openmpi", "MPILENS_CVARS", "btl_vader_fbox_threshold=99999999999", "out of range for its datatype MPI_UNSIGNED"),
    ("openmpi", "MPILENS_CVARS", "btl_vader_eager_limit=-1", "'-1' is not a non-negative integer"),
    ("openmpi", "MPILENS_COMM_CVARS", "halo:btl_vader_eager_limit=65536", "cannot be set per communicator"),
    ("mpich", "MPILENS_CVARS", "MPIR_CVAR_CH3_EAGER_MAX=1", "MPIR_CVAR_CH3_EAGER_MAX is not a control variable of MPICH"),
    ("mpich", "MPILENS_CVARS", "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE=3000000000", "out of range for its datatype MPI_INT"),
    ("mpich", "MPILENS_COMM_CVARS", "MPIR_CVAR_ASYNC_PROGRESS=1", "is not commname:cvar=value"),
    ("openmpi", "MPILENS_MPIT_PVARS", "pml_(", "MPILENS_MPIT_PVARS=pml_(: not a regular expression"),
]


@pytest.mark.parametrize("mpi_, setting, value, expected", BAD, ids=[f"{b[0]}-{b[2]}" for b in BAD])
@pytest.mark.mpi
def test_bad_cvars_are_refused_before_the_job_starts(mpi_, setting, value, expected, tmp_path):
    p = mpilens_run(None, [*launcher(mpi_, 2), str(example(mpi_, "ring"))], tmp_path, settings={setting: value},
                    check=False)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpilens: ") and expected in lines[0], p.stderr
    assert not p.rundir.exists()  # refused before anything was created


def test_bad_cvar_with_the_runtime_preloaded_by_hand_runs_unprofiled(mpi, tmp_path):
    from mpilens.build_info import runtime_library

    env = job_env()
    bad = {"MPILENS_CVARS": GLOBAL[mpi][0] + "=notanumber", "MPILENS_OUTPUT": str(tmp_path / "run")}
    argv = launcher(mpi, 2)
    for k, v in dict(bad, LD_PRELOAD=str(runtime_library(mpi))).items():
        argv += ["-x", f"{k}={v}"] if mpi == "openmpi" else ["-genv", k, v]
    p = subprocess.run(argv + [str(example(mpi, "ring"))], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "ring:" in p.stdout  # the application ran to the end
    lines = [x for x in p.stderr.splitlines() if x.startswith("mpilens:")]
    assert len(lines) == 1 and "'notanumber' is not" in lines[0] and "running the application without mpilens" in lines[0]
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------- pvars
@pytest.mark.mpi
def test_pvar_series_on_openmpi_per_communicator_and_at_regions(tmp_path):
    job = mpirun("openmpi", 4, [str(example("openmpi", "halo3d")), "65536", "20", "20"], tmp_path,
                 settings={"MPILENS_MODE": "mpit", "MPILENS_MPIT_PVARS": "^pml_ob1_", "MPILENS_MPIT_PERIOD_MS": "10"})
    doc = json.loads(mpilens("mpit", "show", str(job.rundir), "--json").stdout)
    assert doc["pvars"]["recorded"] and not doc["pvars"]["absent"] and doc["pvars"]["exposed"] > 0
    rows = {(r["name"], r["communicator"]): r for r in doc["pvars"]["series"]}
    for comm in ("MPI_COMM_WORLD", "halo"):  # halo: the name halo3d gives its Cartesian communicator
        for name in ("pml_ob1_unexpected_msgq_length", "pml_ob1_posted_recvq_length"):
            r = rows[(name, comm)]
            assert r["ranks"] == 4 and r["readable"] and r["samples"] >= 4
    assert all(n.startswith("pml_ob1_") for n, _ in rows)
    from mpilens import mpit

    m = mpit.load(job.rundir)
    whys = {w for s in m.series for w in s.why}
    assert {"init", "begin", "end", "final"} <= whys  # read at MPI_Init, region boundaries and MPI_Finalize
    assert any(r == "exchange" for s in m.series for r in s.region)


@pytest.mark.mpi
def test_pvars_absent_on_this_mpich_are_reported_absent(tmp_path):
    job = mpirun("mpich", 2, [str(example("mpich", "ring"))], tmp_path, settings={"MPILENS_MODE": "mpit"})
    assert "this MPI exposes no MPI_T performance variables; the mpit series are absent" in job.stderr
    doc = json.loads(mpilens("mpit", "show", str(job.rundir), "--json").stdout)
    assert doc["pvars"] == {"recorded": True, "exposed": 0, "absent": True, "series": [], "skipped": []}
    text = mpilens("mpit", "show", str(job.rundir)).stdout
    assert "absent: this MPI exposes no MPI_T performance variables" in text
    html = tmp_path / "r.html"
    mpilens("report", str(job.rundir), "--html", str(html), "--quiet")
    assert "Absent: this MPI exposes no MPI_T performance variables (not zero: not measured)" in html.read_text()
    rec = json.loads(mpilens("mpit", "recommend", str(job.rundir), "--json", "--rule", "unexpected").stdout)
    assert rec["recommendations"][0]["status"] == "not evaluated"
    assert "absent, not zero" in rec["recommendations"][0]["evidence"][0]


@pytest.mark.mpi
def test_pvar_regex_matching_nothing_warns_and_the_run_completes(tmp_path):
    job = mpirun("openmpi", 2, [str(example("openmpi", "ring"))], tmp_path,
                 settings={"MPILENS_MODE": "mpit", "MPILENS_MPIT_PVARS": "no_such_pvar_zzz"})
    assert "MPILENS_MPIT_PVARS=no_such_pvar_zzz matches none of the" in job.stderr
    assert (job.rundir / "profile.json").exists()
    doc = json.loads(mpilens("mpit", "show", str(job.rundir), "--json").stdout)
    assert doc["pvars"]["series"] == [] and doc["pvars"]["exposed"] > 0


# ------------------------------------------------------------------------------------- rules
def eager(rundir) -> dict:
    doc = json.loads(mpilens("mpit", "recommend", str(rundir), "--rule", "eager", "--json").stdout)
    return doc["recommendations"][0]


@pytest.mark.parametrize("mpi_, setting, value", [("openmpi", "btl_vader_eager_limit", "262144"),
                                                   ("mpich", "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", "266240")])
@pytest.mark.mpi
def test_eager_rule_fires_above_the_limit_and_not_below(mpi_, setting, value, tmp_path):
    # 160 KiB faces: above both MPIs' defaults; the exchange dominates (little compute)
    big = mpirun(mpi_, 4, [str(example(mpi_, "halo3d")), "163840", "30", "10"], tmp_path, outdir=tmp_path / "big")
    r = eager(big.rundir)
    assert r["status"] == "fired", r
    rec = r["recommendations"][0]
    assert (rec["setting"], rec["value"]) == (setting, value)
    assert any(f"MPILENS_CVARS={setting}={value}" in a for a in rec["apply"])
    assert any("rendezvous-sized" in e for e in rec["evidence"])
    # 1 KiB faces: every message is sent eagerly already
    small = mpirun(mpi_, 4, [str(example(mpi_, "halo3d")), "1024", "30", "10"], tmp_path, outdir=tmp_path / "small")
    r = eager(small.rundir)
    assert r["status"] == "quiet" and r["recommendations"] == []
    assert "every message is sent eagerly already" in r["evidence"]


@pytest.mark.mpi
def test_tune_measures_the_recommended_setting(tmp_path):
    argv = [*launcher("openmpi", 4), str(example("openmpi", "halo3d")), "163840", "20", "10"]
    p = subprocess.run([str(MPILENS), "tune", "--rule", "eager", "--reps", "2", "--json", "--keep", str(tmp_path / "t"),
                        "--", *argv], env=job_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["fired"] and doc["setting"] == "btl_vader_eager_limit" and doc["tuned"] == "262144"
    assert len(doc["wall_time_s"]["current"]) == 2 and len(doc["wall_time_s"]["tuned"]) == 2
    lo, hi = doc["ci95"]
    assert lo <= doc["speedup"] <= hi  # two runs per side always give an interval (median ratio, bootstrap)
    # the verdict follows the interval (python/mpilens/commands/mpit.py)
    assert doc["verdict"] == ("faster" if lo > 1 else "slower" if hi < 1 else "no significant difference"), doc
    meta = json.loads((tmp_path / "t" / "tuned-0" / "meta.json").read_text())
    assert meta["cvars_set"][0]["new"] == "262144"  # the tuned runs really ran with it


@pytest.mark.mpi
def test_html_report_has_the_mpit_section(tmp_path):
    job = mpirun("openmpi", 2, [str(example("openmpi", "halo3d")), "65536", "10", "10"], tmp_path,
                 settings={"MPILENS_MODE": "mpit", "MPILENS_CVARS": "btl_vader_eager_limit=8192"})
    html = tmp_path / "r.html"
    mpilens("report", str(job.rundir), "--html", str(html), "--quiet")
    page = html.read_text()
    assert "MPI_T: control and performance variables" in page and "btl_vader_eager_limit" in page
    assert "pml_ob1_unexpected_msgq_length" in page and "<polyline" in page


def test_truncated_series_file_is_named_and_the_rest_is_read(tmp_path):
    from mpilens import mpit

    run = tmp_path / "run"
    (run / "mpit").mkdir(parents=True)
    (run / "meta.json").write_text(json.dumps({"mpi": {"flavor": "openmpi", "library": "Open MPI v4.1.4"},
                                               "cvars_set": []}))
    lines = ['{"schema": "mpilens.mpit/1", "rank": 0, "pvars_total": 3, "regex": "", "period_ms": 100, "session": true}',
             '{"var": 0, "name": "x", "class": "level", "datatype": "MPI_INT", "bind": "none", "continuous": true, "count": 1}',
             '{"t": 0.0, "why": "init", "v": [1]}', '{"t": 0.1, "why": "tick", "v": [5]}', '{"t": 0.2, "why": "ti']
    (run / "mpit" / "rank-000000.jsonl").write_text("\n".join(lines))
    m = mpit.load(run)
    assert m.series[0].v == [1, 5]
    assert any("mpit/rank-000000.jsonl line 5 is damaged" in p for p in m.problems)
    assert any("no end record" in p for p in m.problems)
    p = mpilens("mpit", str(tmp_path / "missing"), check=False)
    assert p.returncode == 2 and p.stderr.startswith("mpilens: ") and "is not a directory" in p.stderr


@pytest.mark.mpi
def test_mpit_mode_with_thread_multiple_regions_in_every_thread(tmp_path):
    # four threads per rank open regions (pvar reads at each boundary) while the sampler thread reads
    job = mpirun("openmpi", 2, [str(example("openmpi", "threads")), "20", "70000"], tmp_path,
                 settings={"MPILENS_MODE": "mpit", "MPILENS_MPIT_PERIOD_MS": "1"})
    if "not provided" in job.stdout:
        pytest.skip(job.stdout.strip())
    assert job.profile["complete"]
    from mpilens import mpit

    m = mpit.load(job.rundir)
    assert not m.problems
    regions = [r for s in m.series if s.rank == 0 for r in s.region if r == "exchange"]
    assert len(regions) >= 8 * len({(s.name, s.comm) for s in m.series if s.rank == 0})  # 4 threads x begin/end


@pytest.mark.parametrize("mode", ["profile", "profile,mpit", "profile,counters"])
def test_application_mpit_calls_are_measured(mpi, tmp_path, mode):
    """examples/c/mpit_calls.c: the application's own MPI_T calls after MPI_Init are timed and
    counted, exactly; its MPI_T_init_thread before MPI_Init is not (nothing is measured before);
    mpilens' own MPI_T use (mpit mode's pvars and cvars, counters mode's exposed pvars) adds no
    MPI_T call to the profile."""
    job = run_example(mpi, "mpit_calls", 2, tmp_path, settings={"MPILENS_MODE": mode})
    m = re.search(r"mpit_calls: ok 2 cvars (\d+) pvars (\d+)", job.stdout)
    assert m, job.stdout + job.stderr
    p = job.profile
    got = {k: v["calls"] for k, v in p["functions"].items() if k.startswith("MPI_T_")}
    assert got == {"MPI_T_cvar_get_num": [1, 1], "MPI_T_pvar_get_num": [2, 2],
                   "MPI_T_category_get_num": [1, 1], "MPI_T_finalize": [1, 1]}
    assert all(t is not None and t > 0 for t in p["functions"]["MPI_T_pvar_get_num"]["time_s"])
    if mode == "profile,counters":  # the application sees counters mode's mpilens_* pvars
        plain = run_example(mpi, "mpit_calls", 2, tmp_path / "plain", settings={"MPILENS_MODE": "profile"})
        base = int(re.search(r"pvars (\d+)", plain.stdout).group(1))
        assert int(m.group(2)) > base
