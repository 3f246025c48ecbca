"""Counters mode (SPC-style low-level counters): exact values from programs whose traffic is known,
under both MPIs; snapshots; the live view read while a job runs; the MPI's own pvars (present or
reported absent); MPI_T exposure of the mpilens counters to an MPI_T client."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import MPILENS, example, fn, job_env, launcher, mpilens_run, mpirun, run_example
from mpilens import counters_spc

ALL_GROUPS = "calls,bytes,sizes,eager,queue,unexpected,collectives,peers,comms,pvars"


def counters(mpi, np_, prog, args, tmp_path, **settings):
    s = {"MPILENS_MODE": "counters", "MPILENS_SNAPSHOT_MS": "50", **settings}
    job = run_example(mpi, prog, np_, tmp_path, args, settings=s)
    return job, counters_spc.load(job.rundir)


def cli_json(*argv) -> dict:
    p = subprocess.run([str(MPILENS), *map(str, argv), "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_sizes_bytes_bins_eager_calls(mpi, tmp_path):
    """Rank 0 sends one message of each size to rank 1: bytes, messages, size bins and eager/not eager
    (against the eager limit the MPI's cvars give) are exact; calls agree with the profile."""
    sizes = [0, 8, 64, 65, 3000, 100000, 1000000]
    job, c = counters(mpi, 2, "traffic_p2p", ["sizes", *map(str, sizes)], tmp_path,
                      MPILENS_COUNTERS="calls,bytes,sizes,eager,queue,collectives,peers,comms,pvars")
    lay = c.layout
    assert c.value("BYTES_SENT_USER", 0) == sum(sizes) == c.value("BYTES_RECEIVED_USER", 1)
    assert c.value("MESSAGES_SENT_USER", 0) == len(sizes) == c.value("MESSAGES_RECEIVED_USER", 1)
    assert c.value("BYTES_SENT_USER", 1) == 0 and c.value("MESSAGES_SENT_USER", 1) == 0
    rules = lay.by_name["P2P_MESSAGE_SIZE"]["rules"]
    assert rules == [64, 1024, 16384, 262144]
    assert c.bins("P2P_MESSAGE_SIZE", 0) == [3, 1, 1, 1, 1]
    assert c.value("P2P_MESSAGE_SIZE", 0) == len(sizes)
    eager = lay.doc["eager"]
    if mpi == "openmpi":
        assert lay.doc["transport"] == "ob1"
        assert eager["shm_source"] == "btl_vader_eager_limit" and eager["shm_limit"] == 4096
    else:
        assert eager["shm_source"] == "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE" and eager["shm_limit"] > 0
    lim = eager["shm_limit"]
    assert c.value("EAGER_MESSAGES", 0) == sum(s <= lim for s in sizes)
    assert c.value("NOT_EAGER_MESSAGES", 0) == sum(s > lim for s in sizes)
    # every call counted, as the profile counts it
    prof = job.profile
    for name, f in prof["functions"].items():
        up = name[4:].upper()
        if up in lay.by_name:
            assert [c.value(up, r) for r in range(2)] == f["calls"], name
    assert c.value("SEND", 0) == len(sizes) and c.value("RECV", 1) == len(sizes)
    assert c.value("BARRIER", 0) == 1 and c.bins("COLL_BARRIER", 0) == [1, 0, 0, 0]  # 0 bytes, 2 ranks
    # per peer (world ranks)
    peers = c.ranks_doc[0]["peers"]
    assert peers["bytes_sent"] == [0, sum(sizes)] and peers["messages_sent"] == [0, len(sizes)]
    assert c.ranks_doc[1]["peers"]["bytes_received"] == [sum(sizes), 0]
    # per communicator: all on MPI_COMM_WORLD (size 2)
    world = [x for x in c.ranks_doc[0]["comms"] if x["size"] == 2]
    assert world and world[0]["p2p_bytes_sent"] == sum(sizes) and world[0]["p2p_messages_sent"] == len(sizes)


def test_collectives_agree_with_profile(mpi, tmp_path):
    """traffic_coll on 4 ranks: collective bytes (MPI) and user bytes are the profile's per-class sums;
    every collective call lands in exactly one size bin."""
    job, c = counters(mpi, 4, "traffic_coll", ["1000", "1"], tmp_path)
    prof = job.profile
    for r in range(4):
        coll_s = sum(f["bytes_sent"][r] for f in prof["functions"].values() if f.get("class") == "collective")
        coll_r = sum(f["bytes_recv"][r] for f in prof["functions"].values() if f.get("class") == "collective")
        assert c.value("BYTES_SENT_MPI", r) == coll_s
        assert c.value("BYTES_RECEIVED_MPI", r) == coll_r
        ncoll = sum(f["calls"][r] for f in prof["functions"].values() if f.get("class") == "collective")
        assert c.value("COLLECTIVE_CALLS", r) == ncoll
        tot = 0
        for x in c.layout.doc["counters"]:
            if x["type"] == "collective_bin":
                t = int(c.totals[r][x["offset"]])
                assert t == sum(c.bins(x["name"], r)), x["name"]
                tot += t
        assert tot == ncoll
    # MPI_Allreduce of 1000 doubles (8000 B > 4096) then 2001 doubles, on 4 ranks (<= 8): large msg, small comm
    assert c.bins("COLL_ALLREDUCE", 0) == [0, 0, 2, 0]
    assert c.bins("COLL_BARRIER", 0) == [2, 0, 0, 0]


def test_posted_queue_watermark(mpi, tmp_path):
    """16 MPI_Irecv posted before any send: high watermark 16, all completed, none unexpected. Each
    was posted at least the program's hold and at most its measured window (the entry keeps the
    post time in the word of its bytes sent): the profile's bytes stay exact."""
    n = 16
    job, c = counters(mpi, 2, "spc_traffic", ["queue", str(n)], tmp_path, MPILENS_COUNTERS=ALL_GROUPS)
    m = re.search(r"spc_traffic: queue hold_ms (\d+) window_s ([\d.]+)", job.stdout)
    assert m, job.stdout
    hold_s, window_s = int(m.group(1)) * 1e-3, float(m.group(2))
    assert n * hold_s * 0.98 <= c.value("RECV_POST_TO_COMPLETE_TIME", 0) <= n * window_s * 1.02
    p = job.profile
    assert fn(p, "MPI_Irecv", "calls") == [n, 0]
    assert fn(p, "MPI_Irecv", "bytes_recv") == [8 * n, 0]
    assert fn(p, "MPI_Irecv", "bytes_sent") == [0, 0]
    assert c.value("MAX_POSTED_RECVQ", 0) == n
    assert c.value("MIN_POSTED_RECVQ", 0) == 0
    assert c.value("RECVS_POSTED", 0) == n == c.value("RECVS_COMPLETED", 0)
    assert c.value("POSTED_RECVQ", 0) == 0
    assert c.value("UNEXPECTED", 0) == 0 and c.value("UNEXPECTED_PROBES", 0) == n
    assert c.value("MAX_POSTED_RECVQ", 1) == 0  # rank 1 posts no nonblocking receive
    # the interval watermarks in the snapshots never exceed the run's
    m, _ = c.matrix("MAX_POSTED_RECVQ")
    assert np.nanmax(m[0]) == n


def test_unexpected_messages(mpi, tmp_path):
    """Rank 1 sends 10 messages and a 'go' before rank 0 posts a receive: the 11 receives of rank 0
    all find their message already arrived."""
    _, c = counters(mpi, 2, "spc_traffic", ["unexpected", "10"], tmp_path, MPILENS_COUNTERS=ALL_GROUPS)
    assert c.value("UNEXPECTED", 0) == 11 and c.value("UNEXPECTED_PROBES", 0) == 11
    # without the opt-in group the counter is not measured, never zero
    _, d = counters(mpi, 2, "spc_traffic", ["unexpected", "10"], tmp_path / "off")
    assert d.value("UNEXPECTED", 0) is None
    assert "unexpected" not in d.layout.groups


@pytest.mark.mpi
def test_unexpected_follows_ob1_pvar(tmp_path):
    """Open MPI: while rank 0 sleeps with 20 unexpected messages queued, ob1's own
    pml_ob1_unexpected_msgq_length shows them (+1: rank 1's barrier message on the same
    communicator); our counter, taken at the receives, counts the 20 and the 'go'; the queue is
    empty at the end."""
    _, c = counters("openmpi", 2, "spc_traffic", ["flood", "20", "400"], tmp_path, MPILENS_COUNTERS=ALL_GROUPS)
    assert "PVAR:pml_ob1_unexpected_msgq_length" in c.layout.by_name
    s = c.series[0]
    pv = s.values[:, c.layout.by_name["PVAR:pml_ob1_unexpected_msgq_length"]["offset"]]
    ours = s.values[:, c.layout.by_name["UNEXPECTED"]["offset"]]
    assert 20 <= pv.max() <= 21
    assert pv[-1] == 0
    assert ours.sum() == c.value("UNEXPECTED", 0) == 21
    # the MPI's queue fills before our counter moves (receives come after the sleep)
    peak = int(np.argmax(pv))
    assert ours[:peak].sum() <= 1  # at most the 'go' before the queue peaked


def test_pvars_absent_reported(mpi, tmp_path):
    """Pvars this MPI build does not have are listed as absent, with the reason, not as zeros."""
    job, c = counters(mpi, 2, "traffic_p2p", ["sizes", "8"], tmp_path)
    absent = {p["name"]: p["why"] for p in c.layout.doc["pvars_absent"]}
    names = {x.get("pvar") for x in c.layout.doc["counters"]}
    if mpi == "openmpi":
        assert "runtime_spc_OMPI_SPC_UNEXPECTED" in absent  # Debian's Open MPI is built without SPCs
        assert {"pml_ob1_unexpected_msgq_length", "pml_ob1_posted_recvq_length"} <= names
    else:
        assert {"unexpected_recvq_length", "posted_recvq_length"} <= set(absent)  # no pvars in Debian's MPICH
    doc = cli_json("counters", job.rundir)
    assert {p["name"] for p in doc["pvars_absent"]} == set(absent)
    text = subprocess.run([str(MPILENS), "counters", str(job.rundir)], capture_output=True, text=True).stdout
    assert "absent:" in text and "Eager limit:" in text


def test_snapshots_series_and_heatmap(mpi, tmp_path):
    """A 1.5 s job with 100 ms snapshots: several records per rank, one final record last, times
    increasing, and the deltas sum to the totals."""
    job, c = counters(mpi, 3, "spc_traffic", ["slow", "1.5"], tmp_path, MPILENS_SNAPSHOT_MS="100")
    for r in range(3):
        s = c.series[r]
        assert len(s.t) >= 4
        assert s.final.tolist() == [False] * (len(s.t) - 1) + [True]
        assert np.all(np.diff(s.t) > 0)
        for name in ("MPI_CALLS", "BYTES_SENT_USER", "SENDRECV", "ALLREDUCE"):
            off = c.layout.by_name[name]["offset"]
            assert s.values[:, off].sum() == c.totals[r][off], name
            assert np.all(s.values[:, off] >= 0)
        assert c.value("BYTES_SENT_USER", r) == 8 * c.value("SENDRECV", r)
    out = tmp_path / "heat.png"
    p = subprocess.run([str(MPILENS), "heatmap", str(job.rundir), "--counter", "BYTES_SENT_USER", "--grid", "3x1",
                        "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert out.stat().st_size > 1000
    h = cli_json("heatmap", job.rundir, "--counter", "bytes_sent_user", "--grid", "3x1")
    assert len(h["matrix"]) == 3 and len(h["grid"]) == 1 and len(h["grid"][0]) == 3
    assert sum(v for v in h["matrix"][1] if v) == c.value("BYTES_SENT_USER", 1)


def test_top_reads_live_values_of_running_job(mpi, tmp_path):
    """`mpilens top --once --json` on a job still running: the live files exist, their values move,
    and after the end every rank says finished."""
    out = tmp_path / "run"
    cmd = [str(MPILENS), "run", "-o", str(out), "--mpi", mpi, "--mode", "counters", "--set", "MPILENS_SNAPSHOT_MS=50",
           "--", *launcher(mpi, 2), str(example(mpi, "spc_traffic")), "slow", "6"]
    job = subprocess.Popen(cmd, env=job_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and job.poll() is None:
            if (out / "counters" / "layout.json").exists():
                p = subprocess.run([str(MPILENS), "top", str(out), "--once", "--json"], capture_output=True, text=True)
                if p.returncode == 0:
                    doc = json.loads(p.stdout)
                    if len(doc["ranks"]) == 2 and all(r["state"] == "running" for r in doc["ranks"]):
                        seen.append(doc["ranks"][0]["MPI_CALLS"])
                        if len(seen) >= 2 and seen[-1] > seen[0]:
                            break
            time.sleep(0.2)
        assert job.poll() is None, "the job ended before its live values were seen to change"
        assert len(seen) >= 2 and seen[-1] > seen[0], seen
        assert doc["live_dir"] == str(out / "live")
        stdout, stderr = job.communicate(timeout=120)
        assert job.returncode == 0, stderr
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
            job.wait(timeout=30)
    doc = cli_json("top", out, "--once")
    assert [r["state"] for r in doc["ranks"]] == ["finished", "finished"]
    assert doc["ranks"][0]["MPI_CALLS"] >= seen[-1]
    text = subprocess.run([str(MPILENS), "top", str(out), "--once"], capture_output=True, text=True)
    assert text.returncode == 0 and "MPI_CALLS" in text.stdout


def test_live_dir_setting_and_html_report(mpi, tmp_path):
    """MPILENS_LIVE_DIR puts the live files elsewhere (e.g. /dev/shm), named in layout.json; the
    HTML report has the counters section."""
    live = tmp_path / "shm"
    job, c = counters(mpi, 2, "traffic_p2p", ["sizes", "8", "100000"], tmp_path, MPILENS_LIVE_DIR=str(live))
    assert c.layout.doc["live_dir"] == str(live)
    assert (live / "rank-000001.spc").exists() and (live / "layout.json").exists()
    html = tmp_path / "r.html"
    p = subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = html.read_text()
    assert 'id="counters"' in text and "BYTES_SENT_USER" in text and "data:image/png;base64," in text


def test_mpit_client_sees_mpilens_pvars(mpi, tmp_path):
    """An MPI_T client (examples/c/mpit_client.c) lists the mpilens_* pvars next to the MPI's own and
    reads them: the bytes it sent itself are there."""
    job = mpirun(mpi, 2, [str(example(mpi, "mpit_client"))], tmp_path, settings={"MPILENS_MODE": "counters"})
    lines = [ln for ln in job.stdout.splitlines() if ln.startswith("rank 0 ")]
    found = {ln.split()[3]: int(ln.split()[-1]) for ln in lines if ln.split()[2] == "pvar"}
    assert found.get("mpilens_bytes_sent_user") == 4000, job.stdout
    assert found.get("mpilens_mpi_calls", 0) > 0
    assert any(ln.startswith("rank 0 total pvars") for ln in job.stdout.splitlines())
    # without the counters mode the client sees only the MPI's own pvars
    plain = mpirun(mpi, 2, [str(example(mpi, "mpit_client"))], tmp_path / "p")
    assert "(mpilens_*: 0)" in plain.stdout and " pvar mpilens_" not in plain.stdout


@pytest.mark.mpi
def test_bad_bins_refused_before_start(tmp_path):
    """A malformed MPILENS_P2P_BINS is refused by `mpilens run` with one line, before the job starts."""
    p = mpilens_run(None, [*launcher("openmpi", 2), str(example("openmpi", "ring"))], tmp_path, check=False,
                    settings={"MPILENS_MODE": "counters", "MPILENS_P2P_BINS": "1024,64"})
    assert p.returncode == 2 and "MPILENS_P2P_BINS" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "run").exists()


def test_threads_counted_per_thread(mpi, tmp_path):
    """MPI_THREAD_MULTIPLE (examples/c/threads.c, 4 threads per rank): per-thread counters sum to the
    profile's bytes; every posted receive completes."""
    job, c = counters(mpi, 3, "threads", ["10", "4096"], tmp_path, MPILENS_SNAPSHOT_MS="20")
    if "not provided" in job.stdout:
        pytest.skip("MPI_THREAD_MULTIPLE not provided")
    prof = job.profile
    for r in range(3):
        sent = sum(f["bytes_sent"][r] for f in prof["functions"].values() if f["class"] == "p2p")
        assert c.value("BYTES_SENT_USER", r) == sent > 0
        assert c.value("RECVS_POSTED", r) == c.value("RECVS_COMPLETED", r) > 0
        assert c.value("POSTED_RECVQ", r) == 0
        assert c.value("MPI_CALLS", r) == sum(f["calls"][r] for f in prof["functions"].values())


def test_fortran_calls_counted(mpi, tmp_path):
    """Fortran bindings (examples/fortran/ftraffic.f90) are counted like C: calls and point-to-point
    bytes agree with the profile."""
    job, c = counters(mpi, 2, "ftraffic", [], tmp_path)
    prof = job.profile
    for r in range(2):
        assert c.value("MPI_CALLS", r) == sum(f["calls"][r] for f in prof["functions"].values())
        assert c.value("BYTES_SENT_USER", r) == sum(f["bytes_sent"][r] for f in prof["functions"].values()
                                                   if f["class"] == "p2p") > 0
