"""quo/, the libquo-compatible library: its answers on synthetic machines against values derived by
hand from the machine descriptions, real bindings on this machine, quiescence that sleeps, the
Fortran module, a program written only against the public libquo API, and QUO calls as mpilens
regions.

Synthetic machines (HWLOC_SYNTHETIC, read by hwloc in every process):
  TWO_BY_TWO   "pack:2 numa:2 core:4 pu:1"  PUs 0-15; socket s = PUs 8s..8s+7;
               NUMA node n = PUs 4n..4n+3; core c = PU c
  FOUR_SOCKET  "pack:4 core:2 pu:1"         socket s = PUs 2s, 2s+1; one NUMA node for all
  SMT          "pack:1 core:2 pu:2"         core c = PUs 2c, 2c+1
On synthetic machines nothing is really bound: QUO tracks the bindings it would apply, and every
process publishes its binding to the others, which is what the third-party queries read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import BUILD, MPILENS, MPIS, ROOT, TIMEOUT, job_env, launcher, mpirun, plain_run

TWO_BY_TWO = "pack:2 numa:2 core:4 pu:1"
FOUR_SOCKET = "pack:4 core:2 pu:1"
SMT = "pack:1 core:2 pu:2"

QUO_SUCCESS, QUO_ERR_OOR, QUO_ERR_INVLD_ARG, QUO_ERR_CALL_BEFORE_INIT, QUO_ERR_MPI = 0, 4, 5, 6, 8
QUO_ERR_NOT_SUPPORTED, QUO_ERR_POP = 9, 10


@pytest.fixture(autouse=True)
def _built():
    """Every test here needs quo built and hwloc's tools."""
    if not (BUILD / "quo" / "test-topo").exists() or shutil.which("hwloc-calc") is None:
        pytest.fail("quo is not built (run `make`) or hwloc-calc is missing (`make deps`)")


def quo_bin(mpi: str, name: str) -> Path:
    exe = BUILD / mpi / "quo" / name
    if not exe.exists():
        pytest.fail(f"{exe} is not built; run `make`")
    return exe


def probe(mpi: str, np: int, args: list[str], synthetic: str | None = None, program: str = "quo-probe",
          env: dict[str, str] | None = None) -> dict[int, dict[str, str]]:
    """Run a probe program on np ranks (without mpilens) and return {qid: {key: value}}."""
    extra = dict(env or {})
    if synthetic:
        extra["HWLOC_SYNTHETIC"] = synthetic
    p = subprocess.run(launcher(mpi, np) + [str(quo_bin(mpi, program)), *args], env=job_env(**extra),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    out: dict[int, dict[str, str]] = defaultdict(dict)
    for line in p.stdout.splitlines():
        m = re.fullmatch(r"\s*qid=(\d+) (\w+)=(.*)", line)
        if m:
            key = m.group(2)
            assert key not in out[int(m.group(1))], f"{key} reported twice"
            out[int(m.group(1))][key] = m.group(3).strip()
    assert sorted(out) == list(range(np)), p.stdout
    return out


def hexset(*pus: int) -> str:
    """A CPU set as hwloc prints it: 0x followed by 8 hex digits per 32 PUs."""
    return f"0x{sum(1 << p for p in pus):08x}"


def test_topology_unit_program():
    """quo/tests/test-topo.c: counts, containment, push targets and Algorithm 1 on the three
    synthetic machines, without MPI (its expectations are written next to each check)."""
    p = subprocess.run([str(BUILD / "quo" / "test-topo")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"test-topo: (\d+) checks, 0 failed", p.stdout)
    assert m and int(m.group(1)) >= 60, p.stdout


def test_exported_symbols_are_the_header_api(mpi):
    """The library exports exactly the functions quo.h declares, plus the Fortran shims; no helper
    leaks (hidden visibility) and no declared function is missing."""
    declared = set(re.findall(r"^int (QUO_\w+)\(", (ROOT / "quo" / "include" / "quo.h").read_text(), re.M))
    assert len(declared) == 23
    nm = subprocess.run(["nm", "-D", "--defined-only", str(BUILD / "lib" / f"libquo-{mpi}.so")], capture_output=True,
                        text=True, check=True).stdout
    exported = {line.split()[-1] for line in nm.splitlines() if line.split()[-2] in ("T", "W")}
    shims = {"QUO_create_f2c", "QUO_create_with_flags_f2c", "QUO_get_mpi_comm_by_type_f2c"}
    assert exported == declared | shims


def test_queries_on_two_by_two(mpi):
    np = 4
    out = probe(mpi, np, ["queries"], TWO_BY_TWO)
    for qid in range(np):
        assert out[qid] == {
            "version": "1.4", "nnodes": "1", "nqids": "4", "id": str(qid),
            "nsockets": "2", "npackages": "2", "nnumanodes": "4", "ncores": "16", "npus": "16", "nmachines": "1",
            # unbound: the binding is the whole machine
            "bound": "0", "cbind": hexset(*range(16)),
            "cores_in_socket0": "8", "numas_in_socket0": "2", "pus_in_numa0": "4", "sockets_in_machine": "2",
            "in_machine0": "1", "in_socket0": "0",
            "qids_in_machine0": "0,1,2,3", "qids_in_socket0": "",
            "rc_null_context": str(QUO_ERR_CALL_BEFORE_INIT), "rc_null_out": str(QUO_ERR_INVLD_ARG),
            "rc_bad_index": str(QUO_ERR_INVLD_ARG), "rc_bad_type": str(QUO_ERR_INVLD_ARG),
            "rc_pop_initial": str(QUO_ERR_POP), "rc_version_null": str(QUO_ERR_INVLD_ARG),
            "machine_comm_size": "4", "rc_socket_comm": str(QUO_ERR_NOT_SUPPORTED),
            "rc_free": "0",
            "rc_create_before_init": str(QUO_ERR_MPI), "rc_create_comm_null": str(QUO_ERR_INVLD_ARG),
            "rc_free_null": "0",
        }, qid


def test_push_pop_nesting_on_two_by_two(mpi):
    """qid q binds to core (5 + q), then widens to the enclosing NUMA node and socket, then pops
    back step by step; the stack takes 127 pushes over the initial binding."""
    np = 4
    out = probe(mpi, np, ["stack"], TWO_BY_TWO)
    for qid in range(np):
        core = 5 + qid
        numa, socket = core // 4, core // 8
        o = out[qid]
        assert o["rc_push_core"] == o["rc_push_numa"] == o["rc_push_socket"] == "0"
        assert o["cbind_core"] == hexset(core)
        assert o["bound_core"] == "1"
        assert o["cbind_numa"] == hexset(*range(4 * numa, 4 * numa + 4))
        assert o["cbind_socket"] == hexset(*range(8 * socket, 8 * socket + 8))
        assert o["socket_in_socket0"] == ("1" if socket == 0 else "0")
        # cores 5, 6, 7 widen into socket 0, core 8 into socket 1
        assert o["qids_in_socket1"] == "3"
        assert [o["rc_pop1"], o["rc_pop2"], o["rc_pop3"], o["rc_pop4"]] == ["0", "0", "0", str(QUO_ERR_POP)]
        assert o["cbind_pop1"] == o["cbind_numa"] and o["cbind_pop2"] == o["cbind_core"]
        assert o["cbind_pop3"] == o["cbind_end"] == hexset(*range(16))
        assert o["rc_push_bad_index"] == o["rc_push_bad_policy"] == str(QUO_ERR_INVLD_ARG)
        assert o["pushes_until_full"] == o["pops_until_initial"] == "127"
        assert o["rc_push_full"] == str(QUO_ERR_OOR)


AUTO_DISTRIB = [
    # all unbound: every affinity overlaps, the first max * |R| qids are chosen
    (TWO_BY_TWO, "SOCKET", "-,-,-,-", "1100"),
    # bound to cores 0, 2, 4, 6: all in socket 0; NUMA node 0 has qids 0, 1 and node 1 qids 2, 3
    (TWO_BY_TWO, "SOCKET", "0,2,4,6", "1000"),
    (TWO_BY_TWO, "NUMANODE", "0,2,4,6", "1010"),
    # qid 0 unbound among bound ones (cores 8, 9, 12): never chosen, socket 0 stays without worker
    (TWO_BY_TWO, "SOCKET", "-,8,9,12", "0100"),
    (TWO_BY_TWO, "NUMANODE", "-,8,9,12", "0101"),
]


# the second machine under one MPI only (time budget): four sockets, cores 0, 1 share socket 0;
# cores 2 and 4 are alone in sockets 1 and 2
@pytest.mark.parametrize("mpi,machine,over,binds,want",
                         [(m, *case) for m in MPIS for case in AUTO_DISTRIB]
                         + [("openmpi", FOUR_SOCKET, "SOCKET", "0,1,2,4", "1011")])
def test_auto_distrib(mpi, machine, over, binds, want):
    out = probe(mpi, 4, ["distrib", over, "1", binds], machine)
    assert all(out[q]["rc_distrib"] == "0" for q in out)
    assert "".join(out[q]["selected"] for q in range(4)) == want


def test_smt_and_no_mt(mpi):
    full = probe(mpi, 2, ["queries"], SMT)[0]
    assert (full["ncores"], full["npus"], full["nsockets"]) == ("2", "4", "1")
    nomt = probe(mpi, 2, ["nomt"], SMT)[1]
    assert (nomt["ncores"], nomt["npus"], nomt["pus_in_core1"]) == ("2", "2", "1")


def machine_cores() -> int:
    p = subprocess.run(["hwloc-calc", "--number-of", "core", "all"], capture_output=True, text=True, check=True)
    return int(p.stdout)


def test_bindings_applied_on_this_machine(mpi):
    """On the real machine a push changes the kernel's affinity of the process, a pop restores it."""
    ncores = machine_cores()
    allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    out = probe(mpi, 2, ["stack"])
    for qid, o in out.items():
        core = (5 + qid) % ncores
        pu = subprocess.run(["hwloc-calc", "--physical-output", "--intersect", "pu", f"core:{core}"],
                            capture_output=True, text=True, check=True).stdout.strip()
        assert o["rc_push_core"] == "0"
        assert o["affinity_core"] == pu
        assert o["affinity_pop3"] == allowed
        assert o["rc_pop4"] == str(QUO_ERR_POP)


def test_quiesced_ranks_sleep(mpi):
    """While qid 0 computes, waiters in QUO_barrier are asleep whenever looked at (never R in
    /proc/<pid>/stat); waiters in MPI_Barrier, the control, are seen running: both MPIs poll."""
    quo = probe(mpi, 3, ["quiesce", "0.6", "quo"])
    assert quo[0]["peer_samples"] == "40"
    assert quo[0]["peer_running_samples"] == "0"
    assert all(o["rc_barrier"] == "0" for o in quo.values())
    busy = probe(mpi, 3, ["quiesce", "0.6", "mpi"])
    assert int(busy[0]["peer_running_samples"]) > 0


def test_fortran_module(mpi):
    out = probe(mpi, 2, [], TWO_BY_TWO, program="quo-fortran")
    for qid, o in out.items():
        assert o["version"] == "1.4" and o["nsockets"] == "2" and o["ncores"] == "16" and o["nqids"] == "2"
        assert o["cores_in_socket1"] == "8"
        # both bind to core 9 (socket 1): one socket, one worker
        assert o["rc_push"] == "0" and o["bound"] == "T" and o["in_socket1"] == "T"
        assert o["nqids_in_socket1"] == "2"
        assert o["selected"] == ("T" if qid == 0 else "F")
        assert o["rc_pop_initial"] == str(QUO_ERR_POP)
        assert o["machine_comm_size"] == "2" and o["rc_free"] == "0"


def test_public_api_program_builds_with_pkg_config(mpi, tmp_path):
    """quo/examples/quo-demo.c uses only quo.h and builds with `pkg-config libquo` flags alone
    (C99, warnings as errors), like any libquo application; quo-info gives the same flags."""
    pc_dir = BUILD / mpi / "lib" / "pkgconfig"
    env = dict(os.environ, PKG_CONFIG_PATH=str(pc_dir))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libquo"], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    info = subprocess.run([str(BUILD / mpi / "bin" / "quo-info"), "--cflags", "--libs"], capture_output=True,
                          text=True, check=True).stdout.split()
    assert sorted(info) == sorted(flags)
    exe = tmp_path / "quo-demo"
    cc = subprocess.run([f"mpicc.{mpi}", "-std=c99", "-Wall", "-Werror", "-o", str(exe),
                         str(ROOT / "quo" / "examples" / "quo-demo.c"), *flags], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    p = plain_run(mpi, 2, [str(exe)])
    assert p.returncode == 0, p.stderr
    assert "### quo-demo: node size 2" in p.stdout and "done" in p.stdout
    assert p.stdout.count("p1 worker") == 1  # one socket here: one worker


def test_quo_calls_are_mpilens_regions(mpi, tmp_path):
    """Under `mpilens run`, each QUO call is a region (category quo) holding the MPI calls QUO made
    for it; visits are per rank: rank 0 is the one worker of quo-demo's threaded phase."""
    job = mpirun(mpi, 2, [str(quo_bin(mpi, "quo-demo"))], tmp_path)
    assert "done" in job.stdout
    regions = {r["name"]: r for r in job.profile["regions"]}
    visits = {name: regions[name]["visits"] for name in regions if name.startswith("QUO_")}
    assert visits == {
        "QUO_create": [1, 1], "QUO_get_mpi_comm_by_type": [1, 1], "QUO_auto_distrib": [1, 1],
        "QUO_bind_push": [1, 0], "QUO_qids_in_type": [1, 0], "QUO_bind_pop": [1, 0],
        "QUO_barrier": [1, 1], "QUO_free": [1, 1],
    }
    create = regions["QUO_create"]["functions"]
    assert create["MPI_Comm_split_type"]["calls"] == [1, 1]
    assert regions["QUO_get_mpi_comm_by_type"]["functions"]["MPI_Comm_dup"]["calls"] == [1, 1]
    # the quiescence barrier is not an MPI barrier
    assert "MPI_Barrier" not in regions["QUO_barrier"]["functions"]


def test_quo_calls_are_trace_spans(mpi, tmp_path):
    """Traced, the same calls are spans on each rank's timeline (Chrome export)."""
    job = mpirun(mpi, 2, [str(quo_bin(mpi, "quo-demo"))], tmp_path, settings={"MPILENS_MODE": "profile,trace"})
    out = tmp_path / "quo.json"
    p = subprocess.run([str(MPILENS), "trace", str(job.rundir), "--format", "chrome", "-o", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    spans: dict[tuple[str, int], int] = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "region" and e["name"].startswith("QUO_"):
            assert e["dur"] >= 0
            spans[(e["name"], e["pid"])] += 1
    assert dict(spans) == {
        (n, r): 1 for n in ("QUO_create", "QUO_get_mpi_comm_by_type", "QUO_auto_distrib", "QUO_barrier", "QUO_free")
        for r in (0, 1)} | {("QUO_bind_push", 0): 1, ("QUO_qids_in_type", 0): 1, ("QUO_bind_pop", 0): 1}


# The QUO_create region's change of resident memory (RSS) per process, MiB (low, high): the pages
# hwloc's topology and QUO's shared segment make resident in this process, whatever other processes
# map. Observed on a 2-core machine, alone and beside two loops of Open MPI jobs alike: Open MPI
# 1.35-1.58, MPICH 2.69-2.83. Bounds: about two thirds of the smallest and 1.6 times the largest.
# Its PSS change is not bounded from below: PSS divides each shared page among the processes that
# map it, so the same region read 0.38-0.50 MiB alone and 0.11-0.20 beside those jobs (Open MPI).
# The footprint rows (mem-quo minus mem-trivial, two separate executions) are not bounded: alone on
# the machine they were app 0.02-2.44 / pss 0.50-2.01 MiB (Open MPI) and app 0.59-1.20 / pss
# 1.72-1.86 MiB (MPICH), but beside other MPI jobs pss came out -0.96 to +4.19 MiB and app down to
# -3.76 MiB (the PSS of shared pages, and Open MPI's app peak, vary from execution to execution).
QUO_CREATE_RSS_MIB = {"openmpi": (0.9, 2.5), "mpich": (1.8, 4.5)}


def test_quo_footprint_in_memory_mode(mpi, tmp_path):
    """QUO's own memory, measured by the memory mode two ways: each QUO call is a region whose
    memory change is shown (QUO_create loads the hwloc topology and maps the shared segment), and
    the thesis' Table 5.3 method, a QUO program minus the same program without QUO, is
    `mpilens memory QUO_RUN --minus TRIVIAL_RUN`."""
    from mpilens import memory

    MiB = 2**20
    # one exact reading of PSS (the first sample), then the process's own counters (statm): an exact
    # reading in the region would count the shared pages as other processes map them at that moment;
    # estimated, a change of PSS is the change of private pages plus a share of the new shared ones,
    # so at most the change of RSS. It has no lower bound but the change of private pages: the share
    # is the one the first reading found, small where many processes map the same pages, and the
    # private pages may shrink meanwhile (beside a second test suite, rank 0's PSS changed by -0.02
    # MiB while its RSS grew by 1.18)
    settings = {"MPILENS_MODE": "memory", "MPILENS_MEMORY_ROLLUP_MS": "3600000"}
    quo = mpirun(mpi, 2, [str(quo_bin(mpi, "mem-quo"))], tmp_path, settings=settings, outdir=tmp_path / "quo")
    trivial = mpirun(mpi, 2, [str(quo_bin(mpi, "mem-trivial"))], tmp_path, settings=settings,
                     outdir=tmp_path / "trivial")
    run = memory.load(quo.rundir)
    assert not run.problems, run.problems
    regions = {e["name"]: e for e in run.extents() if e["kind"] == "region"}
    assert {n: e["instances"] for n, e in regions.items()} == {
        n: 2 for n in ("QUO_create", "QUO_auto_distrib", "QUO_bind_push", "QUO_bind_pop", "QUO_barrier", "QUO_free")}
    lo, hi = QUO_CREATE_RSS_MIB[mpi]
    for r in run.ranks:
        t0, t1 = (next(m["t"] for m in r.marks if m["name"] == "QUO_create" and m["what"] == what)
                  for what in ("begin", "end"))
        rss, pss = (r.at(series, t1) - r.at(series, t0) for series in ("rss", "pss"))
        assert lo * MiB < rss < hi * MiB, (r.rank, rss / MiB)
        assert pss <= rss, (r.rank, pss / MiB, rss / MiB)
    assert regions["QUO_create"]["total_change"] < hi * MiB, regions["QUO_create"]  # the mean of the PSS changes
    for name in ("QUO_auto_distrib", "QUO_bind_push", "QUO_bind_pop", "QUO_barrier"):
        assert abs(regions[name]["total_change"]) < 0.5 * MiB, regions[name]

    p = subprocess.run([str(MPILENS), "memory", "--json", str(quo.rundir), "--minus", str(trivial.rundir)],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    foot = json.loads(p.stdout)["footprint"]
    assert foot["baseline"] == str(trivial.rundir) and foot["notes"] == []
    base = {r["series"]: r["mean"] for r in memory.load(trivial.rundir).peaks()}
    rows = {r["series"]: r for r in foot["rows"]}
    assert set(rows) == {"mpi", "mpi_rss", "app", "pss", "rss"}
    for series, row in rows.items():
        assert row["baseline"] == base[series]
        assert row["difference"] == row["run"] - row["baseline"]
    text = subprocess.run([str(MPILENS), "memory", str(quo.rundir), "--minus", str(trivial.rundir)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert text.returncode == 0 and "Footprint: this run minus" in text.stdout, text.stderr


@pytest.mark.mpi
@pytest.mark.apps
def test_coupled_example_same_result_in_every_mode(tmp_path):
    """Static under-subscription (1 rank x 2 threads), QUO reconfiguration and the MPI_Barrier
    variant (2 ranks, one worker with 2 threads in phase B) compute the same data."""
    mpi = "openmpi"
    args = ["3", "4000", "20"]
    runs = {}
    for mode, np in (("static", 1), ("quo", 2), ("mpibarrier", 2)):
        p = subprocess.run(launcher(mpi, np) + [str(quo_bin(mpi, "coupled")), mode, *args],
                           env=job_env(OMP_NUM_THREADS="2"), capture_output=True, text=True, timeout=TIMEOUT)
        assert p.returncode == 0, p.stderr
        runs[mode] = dict(kv.split("=", 1) for kv in p.stdout.split()[1:])
    assert runs["static"]["ranks"] == "1" and runs["quo"]["ranks"] == "2"
    for mode in ("quo", "mpibarrier"):
        assert runs[mode]["workers"] == "1" and runs[mode]["threads"] == "2"
        assert float(runs[mode]["checksum"]) == pytest.approx(float(runs["static"]["checksum"]), rel=1e-9)
