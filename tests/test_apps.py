"""Real applications from Debian's packages under mpilens: NetPIPE (both MPIs), LAMMPS, HPCC and
mpi4py (the MPI Debian built them against). Each runs once as is and once under `mpilens run`
(which detects the MPI itself: no --mpi): the application's own results must not change, and the
profile must be complete and agree with what the application is known to send."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from test_bad_input import read_until
from test_killed import descendants, killed_job

from conftest import (
    MPILENS,
    MPIS,
    NETPIPE,
    ROOT,
    TIMEOUT,
    check_netpipe_profile,
    fn,
    job_env,
    lammps_indent,
    launcher,
    linked_mpi,
    mpilens_run,
    netpipe_sizes,
    plain_run,
    require,
    trace_kinds,
)
from mpilens import counters_spc, intervals, rundir
from mpilens.trace import reader, timeline

pytestmark = [pytest.mark.mpi, pytest.mark.apps]

LAMMPS_STEPS = 3000
HPCC_INPUT = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt")


# ------------------------------------------------------------------------------------- helpers
def flavor(job) -> str:
    """The MPI flavor the runtime reported in meta.json."""
    return job.load().meta["mpi"]["flavor"]


def p2p_balance(profile: dict) -> dict[str, list[int]]:
    """Per-rank bytes of point-to-point functions as the senders and the receivers counted them,
    and as the traffic matrix (sender side) has them per source and per destination."""
    n = profile["nranks"]
    funcs = [f for f in profile["functions"].values() if f["class"] == "p2p"]
    return {
        "sent": [sum(f["bytes_sent"][r] for f in funcs) for r in range(n)],
        "recv": [sum(f["bytes_recv"][r] for f in funcs) for r in range(n)],
        "matrix_from": [sum(m["bytes"] for m in profile["matrix"] if m["src"] == r) for r in range(n)],
        "matrix_to": [sum(m["bytes"] for m in profile["matrix"] if m["dst"] == r) for r in range(n)],
    }


def assert_p2p_balanced(profile: dict) -> None:
    """Every byte sent point-to-point was received by someone, and the matrix agrees per rank."""
    b = p2p_balance(profile)
    assert b["matrix_from"] == b["sent"], b
    assert sum(b["sent"]) == sum(b["recv"]), f"bytes sent {sum(b['sent'])} != bytes received {sum(b['recv'])}: {b}"
    assert b["matrix_to"] == b["recv"], b


def assert_complete(profile: dict, nranks: int) -> None:
    assert profile["nranks"] == nranks
    assert profile["complete"] is True
    assert [r["rank"] for r in profile["ranks"]] == list(range(nranks))
    assert all(r["host"] and r["wall_time_s"] > 0 for r in profile["ranks"]), profile["ranks"]


# ------------------------------------------------------------------------------------- NetPIPE
def netpipe_plan(stdout: str) -> list[tuple[int, int, int]]:
    """NetPIPE's progress lines `  N:  SIZE bytes  REPS times -->  ... Mbps in ... usec`, without the timings."""
    return [tuple(map(int, m)) for m in re.findall(r"^\s*(\d+):\s+(\d+) bytes\s+(\d+) times -->", stdout, re.M)]


SAMPLE_N = 64


@pytest.mark.parametrize("sample", [1, SAMPLE_N], ids=["every-call", f"1-in-{SAMPLE_N}"])
def test_netpipe(mpi, sample, tmp_path):
    """NetPIPE's traffic, derived from its own output file, counted exactly: timing every call, and
    timing 1 in 64 (MPILENS_TIME_SAMPLE, the runtime's sampled copy of its lean path), which keeps
    every count, byte and call site exact."""
    exe = require(NETPIPE[mpi], {"openmpi": "netpipe-openmpi", "mpich": "netpipe-mpich2"}[mpi])
    assert linked_mpi(exe) == mpi
    lo, hi, reps = 2, 4096, 8
    args = [exe, "-l", str(lo), "-u", str(hi), "-p", "0", "-n", str(reps)]
    plain = plain_run(mpi, 2, [*args, "-o", str(tmp_path / "plain.np")])
    assert plain.returncode == 0, plain.stderr
    settings = {"MPILENS_TIME_SAMPLE": str(sample)} if sample > 1 else None
    job = mpilens_run(None, launcher(mpi, 2) + [*args, "-o", str(tmp_path / "tool.np")], tmp_path,
                      settings=settings)
    assert flavor(job) == mpi

    # NetPIPE's own results: the same sizes and repetitions, with and without the tool
    sizes = netpipe_sizes(tmp_path / "tool.np")
    assert sizes == netpipe_sizes(tmp_path / "plain.np")
    assert sizes[0] == lo and sizes[-1] == hi and len(sizes) > 10
    # NetPIPE prints its progress on stderr, the host banner on stdout
    assert netpipe_plan(job.stderr) == netpipe_plan(plain.stderr)
    assert [(size, n) for _, size, n in netpipe_plan(job.stderr)] == [(size, reps) for size in sizes]
    banner = sorted(job.stdout.replace("tool.np", "OUT").splitlines())
    assert banner == sorted(plain.stdout.replace("plain.np", "OUT").splitlines())

    p = job.profile
    assert_complete(p, 2)
    check_netpipe_profile(p, sizes, lo, reps)
    assert_p2p_balanced(p)
    check_netpipe_sites(job, sizes, lo, reps)
    if sample > 1:
        # The first 16 calls of a function are always timed (ML_SAMPLE_WARMUP). After them one call in
        # 64 on average: a countdown of the thread, restarted at a random gap in [1, 127], picks the
        # call it lands on, a send or a receive. So a rank's sends and receives together have ~20 of
        # their ~1300 calls timed (a standard deviation of ~3), one function alone only about half.
        for r in range(2):
            fns = [p["functions"][name] for name in ("MPI_Send", "MPI_Recv")]
            sampled = sum(f["timed_calls"][r] - 16 for f in fns)
            expected = sum(f["calls"][r] - 16 for f in fns) / sample
            assert 0.4 * expected < sampled < 1.8 * expected, (r, sampled, expected)
    else:
        assert all("timed_calls" not in f for f in p["functions"].values())


def check_netpipe_sites(job, sizes: list[int], lo: int, reps: int) -> None:
    """NetPIPE sends from three lines of its MPI module, interleaved at run time: the latency
    test's round trips, each size's repetition count (rank 0, one int per size, before that size's
    trials) and the trials' data. Each line is one call site with exactly its own traffic, derived
    from NetPIPE's output file, whichever site the previous call of the same function came from."""
    out = subprocess.run([str(MPILENS), "report", str(job.rundir), "--json"], capture_output=True, text=True,
                         env=job_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    sites = json.loads(out.stdout)["callsites"]

    def per_rank(name: str, key: str, r: int) -> list[tuple[int, int]]:
        return sorted((s["calls"][r], s[key][r]) for s in sites if s["mpi_function"] == name and s["calls"][r])

    data, k = (3 * reps * len(sizes), 3 * reps * sum(sizes)), len(sizes)
    latency, counts = (100, 100 * lo), (k, 4 * k)
    assert per_rank("MPI_Send", "bytes_sent", 0) == sorted([data, latency, counts])
    assert per_rank("MPI_Send", "bytes_sent", 1) == sorted([data, latency])
    # one receive line serves the latency test and the trials
    both = (data[0] + latency[0], data[1] + latency[1])
    assert per_rank("MPI_Recv", "bytes_recv", 0) == [both]
    assert per_rank("MPI_Recv", "bytes_recv", 1) == sorted([both, counts])


# ------------------------------------------------------------------------------------- LAMMPS
def thermo_lines(text: str) -> list[list[str]]:
    """The thermo tables of a LAMMPS run (step, temp, energies, ...), between `Step ...` and `Loop time`."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.split()[:1] == ["Step"]:
            inside = True
            rows.append(line.split())
        elif line.startswith("Loop time"):
            inside = False
        elif inside:
            rows.append(line.split())
    return rows


@pytest.fixture(scope="module")
def lammps(tmp_path_factory):
    """in.indent on 4 ranks, without and with mpilens: (plain stdout, Job)."""
    work = tmp_path_factory.mktemp("lammps") / "indent"
    mpi, args = lammps_indent(work, LAMMPS_STEPS)
    plain = plain_run(mpi, 4, [*args, "-log", str(work / "log.plain")])
    assert plain.returncode == 0, plain.stderr
    job = mpilens_run(None, launcher(mpi, 4) + [*args, "-log", str(work / "log.tool")], work)
    assert flavor(job) == mpi
    return plain.stdout, job


@pytest.fixture(scope="module")
def lammps_receives(tmp_path_factory) -> dict[int, tuple[int, int, int, int, int]]:
    """The same in.indent run counted by a second reader, not mpilens: tests/data/count_calls.c,
    built with the MPI LAMMPS links and preloaded alone. Per rank: (MPI_Irecv calls, MPI_Wait
    calls, bytes the waits received, MPI_Send calls, their bytes by MPI_Type_size)."""
    base = tmp_path_factory.mktemp("lammps-counted")
    mpi, args = lammps_indent(base / "indent", LAMMPS_STEPS)
    shim = base / "libcount_calls.so"
    subprocess.run([f"mpicc.{mpi}", "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(shim),
                    str(ROOT / "tests" / "data" / "count_calls.c")], check=True, capture_output=True)
    out = plain_run(mpi, 4, ["env", f"LD_PRELOAD={shim}", *args, "-log", str(base / "log.counted")])
    assert out.returncode == 0, out.stderr
    rows = re.findall(r"^count_calls rank (\d+) MPI_Irecv (\d+) MPI_Wait (\d+) wait_bytes_recv (\d+) "
                      r"MPI_Send (\d+) send_bytes (\d+)$", out.stdout, re.M)
    counts = {int(r): tuple(map(int, row)) for r, *row in rows}
    assert sorted(counts) == [0, 1, 2, 3], out.stdout[-2000:]
    return counts


def test_lammps_thermo_unchanged(lammps):
    plain, job = lammps
    rows = thermo_lines(job.stdout)
    assert rows[0][:3] == ["Step", "Temp", "E_pair"]
    assert len(rows) == 2 * (1 + 1 + LAMMPS_STEPS // 500)  # two runs: header and one line every 500 steps
    assert rows[-1][0] == str(2 * LAMMPS_STEPS)
    assert rows == thermo_lines(plain)
    assert "4 MPI tasks" in job.stdout or "4 procs" in job.stdout


def test_lammps_counters_mode(lammps, lammps_receives, tmp_path):
    """LAMMPS under counters mode with its posted-receive queue watched (each receive's entry then
    keeps its post time in the word of its bytes sent): the same thermo output as without the tool;
    every receive LAMMPS posts (an MPI_Irecv, each completed by an MPI_Wait) counted posted and
    completed, as many as and with the bytes that a second reader (tests/data/count_calls.c) counted
    in the same deterministic simulation; no byte sent by a receive, and every byte sent received
    (MPI's semantics); and the time receives spent posted within what the run's length allows."""
    plain, _ = lammps
    work = tmp_path / "indent"
    mpi, args = lammps_indent(work, LAMMPS_STEPS)
    job = mpilens_run(None, launcher(mpi, 4) + [*args, "-log", str(work / "log.tool")], work,
                      settings={"MPILENS_MODE": "counters", "MPILENS_COUNTERS": "calls,bytes,queue"})
    assert thermo_lines(job.stdout) == thermo_lines(plain)
    p, c = job.profile, counters_spc.load(job.rundir)
    assert_complete(p, 4)
    irecv = fn(p, "MPI_Irecv", "calls")
    assert irecv == [lammps_receives[r][0] for r in range(4)] and all(n > 0 for n in irecv), (irecv, lammps_receives)
    assert fn(p, "MPI_Wait", "calls") == [lammps_receives[r][1] for r in range(4)]
    assert fn(p, "MPI_Irecv", "bytes_recv") == [lammps_receives[r][2] for r in range(4)]
    assert fn(p, "MPI_Irecv", "bytes_sent") == [0] * 4
    assert_p2p_balanced(p)
    for r in range(4):
        assert c.value("RECVS_POSTED", r) == c.value("RECVS_COMPLETED", r) == irecv[r], r
        assert c.value("POSTED_RECVQ", r) == 0
        posted_s = c.value("RECV_POST_TO_COMPLETE_TIME", r)
        assert 0 < posted_s <= irecv[r] * p["ranks"][r]["wall_time_s"], (r, posted_s)


def test_lammps_profile(lammps, lammps_receives):
    _, job = lammps
    p = job.profile
    assert_complete(p, 4)
    for name in ("MPI_Send", "MPI_Irecv", "MPI_Wait", "MPI_Sendrecv", "MPI_Allreduce", "MPI_Bcast", "MPI_Cart_create"):
        assert all(c > 0 for c in fn(p, name, "calls")), (name, fn(p, name, "calls"))
    # collectives: every rank calls them the same number of times
    for name in ("MPI_Allreduce", "MPI_Bcast", "MPI_Barrier", "MPI_Reduce"):
        assert len(set(fn(p, name, "calls"))) == 1, (name, fn(p, name, "calls"))
    # every MPI_Irecv is completed by an MPI_Wait (LAMMPS' forward/reverse communication), and the
    # receives, their waits and their bytes are those the second reader counted in the same simulation
    assert fn(p, "MPI_Irecv", "calls") == fn(p, "MPI_Wait", "calls")
    assert all(b > 0 for b in fn(p, "MPI_Irecv", "bytes_recv"))
    assert fn(p, "MPI_Irecv", "calls") == [lammps_receives[r][0] for r in range(4)]
    assert fn(p, "MPI_Wait", "calls") == [lammps_receives[r][1] for r in range(4)]
    assert fn(p, "MPI_Irecv", "bytes_recv") == [lammps_receives[r][2] for r in range(4)]
    # its sends too: their bytes from the datatypes' sizes, which the second reader asks of the MPI
    assert fn(p, "MPI_Send", "calls") == [lammps_receives[r][3] for r in range(4)]
    assert fn(p, "MPI_Send", "bytes_sent") == [lammps_receives[r][4] for r in range(4)]
    # a 2 x 2 grid, periodic in x: each rank talks to its two neighbours and nobody else
    peers = {r: {m["dst"] for m in p["matrix"] if m["src"] == r} for r in range(4)}
    assert peers == {0: {1, 2}, 1: {0, 3}, 2: {0, 3}, 3: {1, 2}}
    assert_p2p_balanced(p)
    # the same profile as the typed objects generated from its spec: the second reader's counts again
    typed = rundir.load(job.rundir).typed_profile
    assert typed.functions["MPI_Irecv"].calls == [lammps_receives[r][0] for r in range(4)]
    assert typed.functions["MPI_Send"].bytes_sent == [lammps_receives[r][4] for r in range(4)]
    assert typed.functions["MPI_Irecv"].class_ == "p2p" and typed.functions["MPI_Allreduce"].class_ == "collective"
    assert {(m.src, m.dst) for m in typed.matrix} == {(r, d) for r, ds in peers.items() for d in ds}


# ------------------------------------------------------------------------------------- HPCC
# figures that depend on how fast the run was; MPIRandomAccess runs its updates under a time bound
# (MPIRandomAccess_TimeBound) and reports in *_ExeUpdates how many it executed within it, fewer
# when the machine is busy
HPCC_TIMING = re.compile(r"time|Time|flops|GBs|GUPs|GBytes|usec|STREAM_|_Gflops|ExeUpdates")


def hpcc_summary(path: Path) -> dict[str, str]:
    """The key=value lines of hpccoutf.txt's summary section."""
    text = path.read_text()
    body = text.split("Begin of Summary section.", 1)[1].split("End of Summary section.", 1)[0]
    return dict(line.split("=", 1) for line in body.splitlines() if "=" in line)


def hpcc_input() -> str:
    """HPCC's example input, for one problem of N=200 in blocks of 20."""
    inf = HPCC_INPUT.read_text()
    for old, new in (("1000         Ns", "200          Ns"), ("80           NBs", "20           NBs")):
        assert old in inf
        inf = inf.replace(old, new)
    return inf


@pytest.fixture(scope="module")
def hpcc(tmp_path_factory):
    """HPCC on 4 ranks (2 x 2 grid, N=200) without and with mpilens: (plain summary, tool summary, Job)."""
    exe = require("hpcc", "hpcc")
    mpi = linked_mpi(exe)
    assert mpi in MPIS
    base = tmp_path_factory.mktemp("hpcc")
    inf = hpcc_input()
    summaries = []
    for name in ("plain", "tool"):
        work = base / name
        work.mkdir()
        (work / "hpccinf.txt").write_text(inf)
        argv = launcher(mpi, 4) + ["-wdir", str(work), exe]
        if name == "plain":
            out = plain_run(mpi, 4, argv[len(launcher(mpi, 4)):])
            assert out.returncode == 0, out.stderr
        else:
            job = mpilens_run(None, argv, work)
        summaries.append(hpcc_summary(work / "hpccoutf.txt"))
    assert flavor(job) == mpi
    return summaries[0], summaries[1], job


def test_hpcc_results_unchanged(hpcc):
    plain, tool, _ = hpcc
    assert tool["Success"] == "1" and tool["CommWorldProcs"] == "4" and tool["HPL_N"] == "200"
    assert tool["MPIRandomAccess_Errors"] == "0" and tool["PTRANS_residual"] == "0"
    # every figure that is not a time or a rate is the same (residuals, norms, sizes, error counts)
    stable = {k for k in plain if not HPCC_TIMING.search(k)}
    assert len(stable) > 40
    assert {k: tool.get(k) for k in stable} == {k: plain[k] for k in stable}


def test_hpcc_profile(hpcc):
    _, _, job = hpcc
    p = job.profile
    assert_complete(p, 4)
    for name in ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Sendrecv", "MPI_Alltoall", "MPI_Allreduce",
                 "MPI_Bcast", "MPI_Comm_split", "MPI_Waitall"):
        assert all(c > 0 for c in fn(p, name, "calls")), (name, fn(p, name, "calls"))
    assert len(set(fn(p, "MPI_Alltoall", "calls"))) == 1
    assert len(set(fn(p, "MPI_Alltoall", "bytes_sent"))) == 1
    assert p["dropped"].get("requests_untracked", 0) == 0


def test_hpcc_p2p_bytes_balance(hpcc):
    """HPCC's RandomAccess and b_eff use nonblocking sends completed together (MPI_Waitall,
    MPI_Testany); every byte sent must still be a byte received."""
    _, _, job = hpcc
    assert_p2p_balanced(job.profile)


HPCC_CANCELS_PER_RANK = 4  # on 4 ranks: test_hpcc_trace says where it comes from


def test_hpcc_trace(hpcc, tmp_path):
    """HPCC traced. Its RandomAccess and b_eff start many small MPI_Isend, which the MPI often
    completes within the call: each such send is one call_done event in the file, which the reader
    gives as the call and its completion. HPCC's results do not change, every message sent is
    matched to its receive, and every operation started has exactly one completion but the
    receives RandomAccess cancels at its end (a cancelled operation moved nothing: no completion).

    How many it cancels comes from HPCC 1.5.0's source (Debian's hpcc 1.5.0-3): MPIRandomAccess and
    MPIRandomAccess_LCG each run a time-bound estimate (RA_TIME_BOUND, time_bound.c and
    time_bound_lcg.c) and then the timed update, on 4 ranks (a power of two) with NumRecvs = 1
    outstanding receive, which each of the four ends with one MPI_Cancel: 4 per rank."""
    plain, _, _ = hpcc
    exe = require("hpcc", "hpcc")
    mpi = linked_mpi(exe)
    (tmp_path / "hpccinf.txt").write_text(hpcc_input())
    job = mpilens_run(None, launcher(mpi, 4) + ["-wdir", str(tmp_path), exe], tmp_path,
                      settings={"MPILENS_MODE": "profile,trace"})
    tool = hpcc_summary(tmp_path / "hpccoutf.txt")
    stable = {k for k in plain if not HPCC_TIMING.search(k)}
    assert {k: tool.get(k) for k in stable} == {k: plain[k] for k in stable}
    tl = timeline.load(job.rundir)
    assert tl.complete and tl.problems == []
    assert tl.messages.unmatched_sends == 0 and tl.messages.unmatched_recvs == 0
    written = 0
    for r in range(4):
        mine = tl.ev[tl.ev["rank"] == r]
        started = mine["req"][(mine["kind"] == reader.CALL) & (mine["req"] != 0)]
        done = mine["req"][mine["kind"] == reader.DONE]
        cancels = int(((mine["kind"] == reader.CALL) & (mine["fn"] == tl.functions.index("MPI_Cancel"))).sum())
        assert len(started) > 0 and len(set(started.tolist())) == len(started)
        assert len(set(done.tolist())) == len(done) and set(done.tolist()) <= set(started.tolist())
        assert cancels == HPCC_CANCELS_PER_RANK == len(started) - len(done), (r, cancels, len(started), len(done))
        raw = trace_kinds(job.rundir / "trace" / f"rank-{r:06d}.bin")
        assert raw[reader.DONE] + raw[reader.CALL_DONE] + raw[reader.LATE] == len(done)
        written += raw[reader.CALL_DONE]
    assert written > 0


# ------------------------------------------------------------------------------------- mpi4py
MPI4PY_SCRIPT = '''\
from array import array
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
N, SIZE = {n}, {size}
buf = bytearray(SIZE)
for i in range(N):
    if rank == 0:
        comm.Send([bytearray(b"x" * SIZE), MPI.BYTE], dest=1, tag=i)
    elif rank == 1:
        comm.Recv([buf, MPI.BYTE], source=0, tag=i)
total = array("d", [0.0])
comm.Allreduce([array("d", [float(rank)]), MPI.DOUBLE], [total, MPI.DOUBLE], op=MPI.SUM)
if rank == 1:
    print(f"mpi4py: {{N}} messages of {{SIZE}} bytes, last byte {{chr(buf[-1])}}, sum of ranks {{total[0]:.0f}}")
'''


def test_mpi4py(tmp_path):
    python = "/usr/bin/python3"
    found = subprocess.run([python, "-c", "import mpi4py.MPI as m; print(m.__file__)"], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.fail(f"mpi4py is not importable by {python}: `make deps` installs python3-mpi4py\n{found.stderr}")
    mpi = linked_mpi(found.stdout.strip())
    assert mpi in MPIS, f"{found.stdout.strip()} links no known MPI"
    n, size = 5, 12345
    script = tmp_path / "sendrecv.py"
    script.write_text(MPI4PY_SCRIPT.format(n=n, size=size))
    plain = plain_run(mpi, 2, [python, str(script)])
    assert plain.returncode == 0, plain.stderr
    job = mpilens_run(None, launcher(mpi, 2) + [python, str(script)], tmp_path)
    assert job.stdout == plain.stdout == f"mpi4py: {n} messages of {size} bytes, last byte x, sum of ranks 1\n"
    assert flavor(job) == mpi
    assert job.load().meta["mpi"]["thread_level"] == "MPI_THREAD_MULTIPLE"  # mpi4py's default

    p = job.profile
    assert_complete(p, 2)
    assert fn(p, "MPI_Send", "calls") == [n, 0]
    assert fn(p, "MPI_Send", "bytes_sent") == [n * size, 0]
    assert fn(p, "MPI_Recv", "calls") == [0, n]
    assert fn(p, "MPI_Recv", "bytes_recv") == [0, n * size]
    assert fn(p, "MPI_Allreduce", "calls") == [1, 1]
    assert fn(p, "MPI_Allreduce", "bytes_sent") == [8, 8]
    assert [(m["src"], m["dst"], m["messages"], m["bytes"]) for m in p["matrix"]] == [(0, 1, n, n * size)]


def test_lammps_heaviest_call_sites_are_lammps_functions(lammps):
    """LAMMPS' MPI calls are made from its shared library: the heaviest call sites are named by
    its functions (C++ names from the library's symbol table; Debian ships no line information)."""
    _, job = lammps
    p = subprocess.run([str(MPILENS), "report", str(job.rundir), "--json"], capture_output=True, text=True,
                       env=job_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    sites = json.loads(p.stdout)["callsites"]
    top = sites[:5]
    assert len(top) == 5
    for s in top:
        assert Path(s["module"]).name.startswith("liblammps.so"), s
        assert s["symbol"].startswith("LAMMPS_NS::"), s
        assert len(s["calls"]) == 4
    # a second reader: binutils' nm and objdump on the library. Each site's address is a return
    # address inside the function named (its symbol's range), right after a call instruction.
    lib = top[0]["module"]
    nm = subprocess.run(["nm", "-D", "-C", "-S", "--defined-only", lib], capture_output=True, text=True, check=True)
    funcs = []
    for line in nm.stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in "tTwW":
            funcs.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    for s in top:
        a = s["address"]
        start, size, name = next(f for f in funcs if f[0] < a <= f[0] + f[1])
        assert s["symbol"] == name, (s, name)
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                              f"--stop-address={start + size:#x}", lib], capture_output=True, text=True, check=True)
        ins = [m for m in re.finditer(r"^\s*([0-9a-f]+):\s+(\S+)", dis.stdout, re.M)]
        before = [m.group(2) for m, nxt in zip(ins, ins[1:]) if int(nxt.group(1), 16) == a]
        assert before and before[0].startswith("call"), (s, before)
    # the sites of each function add up to its calls on every rank
    for name, f in job.profile["functions"].items():
        assert [sum(s["calls"][r] for s in sites if s["mpi_function"] == name) for r in range(4)] == f["calls"], name


def test_lammps_killed_by_sigkill_is_reported_from_every_rank(tmp_path):
    """Debian's LAMMPS (in.indent, 4 ranks) with rank 0 killed by SIGKILL mid-run and the others
    then ended by the launcher, none of them writing anything at its end (MPILENS_SIGNALS=0): every
    rank is reported from its statistics file, and what MPI's semantics say of LAMMPS holds for
    the counts up to the kill: every rank made the same collectives but for the one it was in, each
    receive was waited for but the few in flight, and each rank talked to its two neighbours only."""
    work = tmp_path / "indent"
    mpi, args = lammps_indent(work, 30000)
    out = tmp_path / "run"
    cmd = [str(MPILENS), "run", "-o", str(out), "--set", "MPILENS_SIGNALS=0", "--set", "MPILENS_INTERVALS=1", "--",
           *launcher(mpi, 4), *args, "-log", str(work / "log.tool")]

    def rank0(proc) -> list[int]:
        lmp = [p for p in descendants(proc.pid) if Path(f"/proc/{p}/comm").read_text().strip().startswith("lmp")]
        assert len(lmp) == 4, lmp
        env = {p: Path(f"/proc/{p}/environ").read_text() for p in lmp}
        return [p for p in lmp if "OMPI_COMM_WORLD_RANK=0\0" in env[p] or "PMI_RANK=0\0" in env[p]]

    # once a thermo line is out, the run is under way
    killed_job(cmd, lambda proc: read_until(proc, r"^\s+1500\s", timeout=TIMEOUT), rank0)
    run = rundir.load(out)
    p = run.profile
    assert [r["ended_by"] for r in p["ranks"]] == ["killed"] * 4, p["ranks"]
    for name in ("MPI_Allreduce", "MPI_Bcast"):
        calls = fn(p, name, "calls")
        assert min(calls) > 0 and max(calls) - min(calls) <= 1, (name, calls)
    irecv, wait = fn(p, "MPI_Irecv", "calls"), fn(p, "MPI_Wait", "calls")
    assert all(0 <= i - w <= 4 and w > 1000 for i, w in zip(irecv, wait)), (irecv, wait)
    peers = {r: {m["dst"] for m in p["matrix"] if m["src"] == r} for r in range(4)}
    assert peers == {0: {1, 2}, 1: {0, 3}, 2: {0, 3}, 3: {1, 2}}
    assert any("recovered from" in x for x in run.problems), run.problems
    # the compute intervals (MPILENS_INTERVALS) from the same files: one per synchronizing collective
    # each rank completed (LAMMPS makes them all on MPI_COMM_WORLD), as many as the calls counted
    sync = [sum(fn(p, name, "calls")[r] for name in ("MPI_Allreduce", "MPI_Barrier", "MPI_Allgather",
                                                      "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv")
                if name in p["functions"]) for r in range(4)]
    assert p["intervals"]["recorded"] == sync, (p["intervals"], sync)
    iv = intervals.load(out)
    assert iv.compute.shape == (4, min(sync)) and sum("intervals recovered from" in x for x in iv.problems) == 4
    assert (iv.compute >= 0).all() and (iv.collective >= 0).all()
