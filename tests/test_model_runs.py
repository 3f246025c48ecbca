"""Real runs on this machine: the BSP harness (calibration at 2 ranks, predictions checked at 4 and 8
oversubscribed ranks with sleep-based FTQ), the partitioned benchmark under MPICH (MPI-4
MPI_Psend_init/MPI_Pready) with 2 and 4 threads against the model, and the ping-pong table."""

import csv
import io
import json
import subprocess

import numpy as np
import pytest

from conftest import MPILENS, example, job_env, plain_run, run_example
from mpilens.model import data

FTQ = ["-w", "ftq", "--sleep", "--mean", "10000", "--sd", "1000"]


def test_bsp_harness_log_matches_intervals(mpi, tmp_path):
    """The harness' own rank-0 log and the intervals mpilens records from the same ordinary run
    agree: K work intervals after the setup interval, the same per-rank times and maxima."""
    k = 20
    log = tmp_path / "bsp.json"
    job = run_example(mpi, "bsp_harness", 2, tmp_path, ["-w", "ftq", "--sleep", "--mean", "3000", "--sd", "300",
                                                        "-k", str(k), "--halo", "4096", "--seed", "7", "-o", str(log)],
                      settings={"MPILENS_INTERVALS": "1"})
    assert "bsp_harness: ftq, 2 ranks, 20 intervals" in job.stdout
    doc = json.loads(log.read_text())
    assert doc["schema"] == "mpilens.bsp/1" and doc["seed"] == 7 and doc["halo_bytes"] == 4096
    assert len(doc["hosts"]) == 2 and len(doc["maxima_s"]) == k
    from_log, from_run = data.load(log), data.load(job.rundir)
    assert from_run.skipped == 1 and from_log.skipped == 0
    assert from_run.times.shape == from_log.times.shape == (2, k)
    # mpilens times from barrier exit to barrier entry, the harness between its two MPI_Wtime calls
    assert abs(from_run.times - from_log.times).max() < 5e-4
    assert abs(from_run.maxima - from_log.maxima).max() < 5e-4
    assert (from_log.maxima >= 2000e-6).all() and from_log.runtime == pytest.approx(doc["runtime_s"], rel=1e-6)
    assert job.profile["functions"]["MPI_Barrier"]["calls"] == [k + 1] * 2


@pytest.mark.mpi
def test_harness_workloads(tmp_path):
    exe = str(example("mpich", "bsp_harness"))
    for w in (["-w", "fwq", "--mean", "200", "--sd", "20"], ["-w", "dgemm", "-n", "48", "-r", "2"],
              ["-w", "spmv", "-n", "4096"], ["-w", "ftq", "--mean", "500", "--sd", "50", "--halo", "65536"]):
        p = plain_run("mpich", 4, [exe, *w, "-k", "5", "-o", str(tmp_path / "log.json")])
        assert p.returncode == 0, p.stderr
        doc = json.loads((tmp_path / "log.json").read_text())
        assert doc["workload"] == w[1] and len(doc["times_s"]) == 4 and all(len(t) == 5 for t in doc["times_s"])
    bad = plain_run("mpich", 1, [exe, "-w", "hpl"])
    assert bad.returncode == 2 and "unknown workload" in bad.stderr


@pytest.mark.mpi
def test_variability_predictions_on_this_machine(tmp_path):
    """Calibrate on 4 runs at 2 ranks, predict 4 and 8 ranks, measure 3 runs at each (Open MPI,
    oversubscribed: 8 ranks on this machine's cores, FTQ sleeping Normal(10 ms, 1 ms) quanta), and
    report the measured coverage and errors of every method."""
    k = "30"
    runs: dict[int, list[str]] = {2: [], 4: [], 8: []}
    count = {2: 4, 4: 3, 8: 3}
    # interleaved (2, 4, 8, 2, 4, 8, ...): this VM's speed drifts between phases, and the
    # calibration and the measured runs must see the same phases, as in any benchmark
    for i in range(max(count.values())):
        for np_ in (2, 4, 8):
            if i >= count[np_]:
                continue
            out = tmp_path / f"p{np_}-{i}"
            # waiting ranks must yield the cores to the sleeping ones that wake up (oversubscribed)
            run_example("openmpi", "bsp_harness", np_, tmp_path, [*FTQ, "-k", k], outdir=out,
                        settings={"MPILENS_INTERVALS": "1"}, env=job_env(OMPI_MCA_mpi_yield_when_idle="1"))
            runs[np_].append(str(out))
    plot = tmp_path / "variability.png"
    cmd = [str(MPILENS), "model", "variability", *runs[2], "--predict", "4,8", "--measured", *runs[4], *runs[8],
           "--plot", str(plot), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=job_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["calibration"]["nranks"] == 2 and doc["calibration"]["maxima"] == 4 * int(k)
    assert [x["nranks"] for x in doc["predictions"]] == [4, 8]
    acc = {a["label"]: a for a in doc["accuracy"]}
    for label, a in acc.items():
        print(f"{label:<30} coverage {a['coverage']} median rel. error {a['median_rel_error']:.4f}")
    assert acc["non-parametric"]["measured"] == 6
    # The machine's noise is not the model's: the accuracy on this machine is reported, not
    # bounded (a median error of 0.5 % on an idle machine, 58 % beside a second `make test`, whose
    # jobs came and went between the calibration and the measured runs); the methods' coverage
    # is tested on samples of known distributions (test_model_statistics.py). What must hold
    # whatever the load: each figure is what its definition gives from the runs measured.
    measured = doc["measured"]
    assert sorted(r["nranks"] for r in measured) == [4, 4, 4, 8, 8, 8]
    by_p = {p["nranks"]: p for p in doc["predictions"]}
    for r in measured:
        assert r["intervals"] == int(k) and r["runtime_s"] > 0
        assert r["runtime_for_k_s"] == pytest.approx(r["runtime_s"] * by_p[r["nranks"]]["intervals"] / r["intervals"])
    for label, a in acc.items():
        if a["coverage"] is None:
            continue
        pairs = [(next(m for m in by_p[r["nranks"]]["methods"] if m["label"] == label), r["runtime_for_k_s"])
                 for r in measured]
        pairs = [(m, y) for m, y in pairs if None not in (m["median_s"], m["ci_low_s"], m["ci_high_s"])]
        assert a["measured"] == len(pairs) and a["inside"] == sum(m["ci_low_s"] <= y <= m["ci_high_s"] for m, y in pairs)
        assert a["median_rel_error"] == pytest.approx(float(np.median([abs(m["median_s"] - y) / y for m, y in pairs])))
    for pred in doc["predictions"]:
        for m in pred["methods"]:
            assert 0 < m["ci_low_s"] <= m["median_s"] <= m["ci_high_s"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the text form names the method of every number
    text = subprocess.run(cmd[:-1], capture_output=True, text=True, env=job_env(), timeout=300).stdout
    assert "non-parametric bootstrap of 120 interval maxima" in text and "Accuracy" in text


def _bench_rows(stdout: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO("\n".join(x for x in stdout.splitlines() if not x.startswith("#")))))


@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.mpi
def test_partitioned_benchmark_and_model(threads, tmp_path):
    """MPI-4 partitioned sends under MPICH 4.0 (2 ranks, OpenMP threads sleeping normally distributed
    times), the point-to-point (MPIPCL-style) variant and the single-send baseline, compared with
    the model fed with this machine's ping-pong table."""
    exe = str(example("mpich", "partitioned_bench"))
    sizes = "65536,1048576,4194304"
    p = plain_run("mpich", 2, [exe, "--mode", "partitioned,pcl,single", "-t", str(threads), "--compute-ms", "5",
                               "--variability", "0.25", "--reps", "3", "--warmup", "1", "--sizes", sizes])
    assert p.returncode == 0, p.stderr
    rows = _bench_rows(p.stdout)
    assert len(rows) == 3 * 3 * 3
    assert {r["mode"] for r in rows} == {"partitioned", "pcl", "single"}
    assert all(float(r["bw_MBps"]) > 0 and int(r["threads"]) == threads for r in rows)
    bench = tmp_path / "bench.csv"
    bench.write_text(p.stdout)
    table = tmp_path / "pingpong.csv"
    pp = subprocess.run([str(MPILENS), "bench", "pingpong", "--mpi", "mpich", "-o", str(table), "--max-size", "4MiB",
                         "--iters-scale", "0.2", "--repeat", "1"], capture_output=True, text=True, env=job_env(),
                        timeout=300)
    assert pp.returncode == 0, pp.stderr
    plot = tmp_path / "partitioned.png"
    m = subprocess.run([str(MPILENS), "model", "partitioned", "--pingpong", str(table), "--threads", str(threads),
                        "--compute-ms", "5", "--variability", "0.25", "--measured", str(bench), "--plot", str(plot),
                        "--json"], capture_output=True, text=True, env=job_env(), timeout=300)
    assert m.returncode == 0, m.stderr
    (doc,) = json.loads(m.stdout)["models"]
    assert doc["parameters"]["sigma_us"] == pytest.approx(5000 * 0.25 ** 2)
    cmp = doc["comparison"]
    assert {(c["mode"], int(c["size_bytes"])) for c in cmp} == {(mo, int(s)) for mo in ("partitioned", "pcl", "single")
                                                               for s in sizes.split(",")}
    for c in cmp:
        print(f"{threads} threads {c['mode']:<12} {int(c['size_bytes']):>8} B: measured {c['measured_MBps']:.0f} MB/s, "
              f"model {c['model_MBps']:.0f} MB/s")
        assert c["measured_MBps"] > 0 and c["model_MBps"] > 0 and c["reps"] == 3
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.mpi
def test_partitioned_benchmark_under_mpilens(tmp_path):
    """The benchmark is an ordinary MPI program: under mpilens every MPI_Pready of every thread is
    counted (4 threads x (3 + 1 warm-up) repetitions x 2 sizes)."""
    job = run_example("mpich", "partitioned_bench", 2, tmp_path, ["--mode", "partitioned", "-t", "4", "--compute-ms",
                                                                  "2", "--reps", "3", "--warmup", "1", "--sizes",
                                                                  "4096,65536"])
    f = job.profile["functions"]
    assert f["MPI_Pready"]["calls"] == [32, 0]
    assert f["MPI_Psend_init"]["calls"] == [2, 0] and f["MPI_Precv_init"]["calls"] == [0, 2]


@pytest.mark.mpi
def test_partitioned_mode_needs_mpi4():
    p = plain_run("openmpi", 2, [str(example("openmpi", "partitioned_bench")), "--mode", "partitioned", "--reps", "1",
                                 "--warmup", "0", "--sizes", "1024"])
    assert p.returncode == 2
    assert "needs MPI-4" in p.stderr and "compiled out" in p.stderr
    # the point-to-point modes work on Open MPI 4.1
    p = plain_run("openmpi", 2, [str(example("openmpi", "partitioned_bench")), "--mode", "pcl,single", "-t", "2",
                                 "--compute-ms", "1", "--reps", "2", "--warmup", "0", "--sizes", "4096"])
    assert p.returncode == 0, p.stderr
    assert len(_bench_rows(p.stdout)) == 4


def test_bench_pingpong_table(tmp_path):
    out = subprocess.run([str(MPILENS), "bench", "pingpong", "--max-size", "64KiB", "--iters-scale", "0.1", "--repeat",
                          "2", "--json"],
                         capture_output=True, text=True, env=job_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    sizes = [r["size_bytes"] for r in doc["table"]]
    assert sizes == [1 << i for i in range(17)] and doc["repeat"] == 2
    assert all(r["latency_us"] > 0 and r["bandwidth_MBps"] > 0 for r in doc["table"])
    assert doc["table"][-1]["bandwidth_MBps"] > doc["table"][0]["bandwidth_MBps"]
    # the CSV is what the model reads
    table = tmp_path / "pp.csv"
    subprocess.run([str(MPILENS), "bench", "pingpong", "--max-size", "4KiB", "--iters-scale", "0.1", "--repeat", "1",
                    "-o", str(table)],
                   check=True, capture_output=True, env=job_env(), timeout=300)
    from mpilens.model.partitioned import load_table

    assert len(load_table(table).size) == 13


@pytest.mark.mpi
def test_report_section_of_intervals(tmp_path):
    """`mpilens report` of a run recorded with MPILENS_INTERVALS shows the GEV fits of the interval
    maxima and EMMA projections; the PNG export draws them."""
    job = run_example("mpich", "bsp_harness", 2, tmp_path, ["-w", "ftq", "--sleep", "--mean", "2000", "--sd", "200",
                                                            "-k", "40"], settings={"MPILENS_INTERVALS": "1"})
    html, png = tmp_path / "r.html", tmp_path / "png"
    p = subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html), "--png", str(png), "--quiet"],
                       capture_output=True, text=True, env=job_env())
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert 'id="variability-fits"' in page and 'id="variability-emma"' in page and "40 intervals" in page
    assert (png / "variability.png").exists()
    # without intervals the section is left out
    plain = run_example("mpich", "bsp_harness", 2, tmp_path, ["-k", "3", "--mean", "100"], outdir=tmp_path / "plain")
    subprocess.run([str(MPILENS), "report", str(plain.rundir), "--html", str(tmp_path / "p.html"), "--quiet"],
                   check=True, capture_output=True, env=job_env())
    assert 'id="variability"' not in (tmp_path / "p.html").read_text()


@pytest.mark.mpi
def test_intervals_from_a_trace(tmp_path):
    """A run recorded in trace mode gives the model the same intervals as MPILENS_INTERVALS: the
    synchronizing collectives of all ranks in the trace fence them."""
    from pathlib import Path

    from mpilens.model.data import _from_trace

    log = tmp_path / "bsp.json"
    job = run_example("openmpi", "bsp_harness", 3, tmp_path, ["-w", "ftq", "--sleep", "--mean", "2000", "--sd", "200",
                                                              "-k", "15", "--halo", "1024", "-o", str(log)],
                      settings={"MPILENS_INTERVALS": "1", "MPILENS_MODE": "trace"})
    from_intervals, from_trace = data.load(job.rundir), _from_trace(Path(job.rundir), None)
    assert from_intervals.kind == "rundir" and from_trace.kind == "trace"
    assert from_trace.times.shape == from_intervals.times.shape == (3, 15)
    assert abs(from_trace.times - from_intervals.times).max() < 1e-6
    assert abs(from_trace.maxima - data.load(log).maxima).max() < 5e-4
    # without MPILENS_INTERVALS the trace is used
    job = run_example("openmpi", "bsp_harness", 2, tmp_path, ["-k", "6", "--mean", "500", "--sd", "0"],
                      outdir=tmp_path / "trace-only", settings={"MPILENS_MODE": "trace"})
    s = data.load(job.rundir)
    assert s.kind == "trace" and s.times.shape == (2, 6) and (s.times > 400e-6).all()
