"""Jobs across several hosts: two "hosts" made by scripts/testhosts.sh (network and UTS namespaces
with their own names and addresses on a private bridge), reached by the launchers through
scripts/testhost-rsh, two ranks on each. Open MPI and MPICH (Hydra) both launch across them.

Checked against what the placement must be: host names in meta.json, the profile and the report,
each rank on its host, memory mode's shared mappings split among the ranks of each host, and
trace mode's clocks: the second host is aligned to rank 0's by measured offsets, whose error bound
`mpilens trace` reports, and no message arrow may point backwards by more than that bound.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import MPILENS, NETPIPE, ROOT, check_netpipe_profile, example, fn, machine_lock, mpilens_run, netpipe_sizes
from mpilens import rundir

HOSTS = ROOT / "scripts" / "testhosts.sh"
RSH = ROOT / "scripts" / "testhost-rsh"
N, SIZE, NP = 200, 1024, 4

pytestmark = [pytest.mark.mpi, pytest.mark.hosts,
              pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                 reason="test hosts need root and iproute2 (network namespaces)")]


@pytest.fixture(scope="module")
def hosts():
    with machine_lock("hosts"):  # the namespaces mlh1, mlh2 and their addresses: one suite at a time
        up = subprocess.run([str(HOSTS), "up", "2"], capture_output=True, text=True, timeout=60)
        assert up.returncode == 0, up.stderr
        try:
            yield ["mlh1", "mlh2"]
        finally:
            subprocess.run([str(HOSTS), "down"], capture_output=True, timeout=60)


def launch(mpi: str, per_host: int = 2) -> list[str]:
    """The launcher's command for per_host ranks on each of the two test hosts."""
    hosts, np = f"mlh1:{per_host},mlh2:{per_host}", str(2 * per_host)
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--mca", "plm_rsh_agent", str(RSH), "--mca", "plm_rsh_no_tree_spawn", "1",
                "--mca", "btl_tcp_if_include", "10.77.0.0/24", "--mca", "oob_tcp_if_include", "10.77.0.0/24",
                "--host", hosts, "-np", np]
    return ["mpirun.mpich", "-launcher", "ssh", "-launcher-exec", str(RSH), "-iface", "mlbr0", "-hosts", hosts,
            "-np", np]


def run(mpi: str, tmp_path, mode: str = "profile", argv: list[str] | None = None, per_host: int = 2) -> rundir.Run:
    """`mpilens run` across the two hosts (examples/c/ring N SIZE unless argv is given)."""
    argv = argv or [str(example(mpi, "ring")), str(N), str(SIZE)]
    return mpilens_run(None, [*launch(mpi, per_host), *argv], tmp_path, settings={"MPILENS_MODE": mode}).load()


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_profile_across_hosts(hosts, mpi, tmp_path):
    r = run(mpi, tmp_path)
    p = r.profile
    assert r.meta["hosts"] == hosts and r.meta["rank_host"] == [0, 0, 1, 1]
    assert [x["host"] for x in p["ranks"]] == ["mlh1", "mlh1", "mlh2", "mlh2"]
    assert fn(p, "MPI_Send", "calls") == [N] * NP and fn(p, "MPI_Recv", "bytes_recv") == [N * SIZE] * NP
    assert sorted((m["src"], m["dst"], m["messages"]) for m in p["matrix"]) == [(r_, (r_ + 1) % NP, N)
                                                                                for r_ in range(NP)]
    text = subprocess.run([str(MPILENS), "report", str(r.path)], capture_output=True, text=True).stdout
    assert "mlh1" in text and "mlh2" in text


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_trace_clocks_across_hosts(hosts, mpi, tmp_path):
    r = run(mpi, tmp_path, "trace")
    summary = json.loads(subprocess.run([str(MPILENS), "trace", "--json", str(r.path)],
                                        capture_output=True, text=True, check=True).stdout)
    errors = summary["clock_error_s"]
    assert list(errors) == ["mlh2"]  # rank 0's host is the reference
    bound = errors["mlh2"]
    assert bound is not None and 0 < bound < 0.01, bound
    m = r.trace.messages
    assert len(m.send_ev) == NP * N and m.unmatched_sends == 0 and m.unmatched_recvs == 0
    # every arrow goes forward, up to the alignment's error bound
    assert (m.recv_t - m.send_t).min() >= -bound, ((m.recv_t - m.send_t).min(), bound)
    text = subprocess.run([str(MPILENS), "trace", str(r.path)], capture_output=True, text=True).stdout
    assert "Clocks: mlh2 aligned to rank 0's host within" in text


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_memory_shared_mappings_split_per_host(hosts, mpi, tmp_path):
    """Shared mappings count for 1/k of each rank, k the ranks on its host: 2 here, not 4."""
    r = run(mpi, tmp_path, "memory")
    assert r.memory.local == {0: 2, 1: 2, 2: 2, 3: 2}


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_one_container_per_host(hosts, mpi, tmp_path):
    """MPILENS_FILES=host across the two hosts: each stream folder holds one container per host,
    named by the host's first rank (0 on mlh1, 2 on mlh2), no per-rank file, and the readers see the
    four ranks with the ring's known messages and each host's shared mappings split in two."""
    argv = [str(example(mpi, "ring")), str(N), str(SIZE)]
    r = mpilens_run(None, [*launch(mpi), *argv], tmp_path,
                    settings={"MPILENS_MODE": "trace,memory", "MPILENS_FILES": "host"}).load()
    for folder in ("trace", "memory", "maps"):
        names = sorted(p.name for p in (r.path / folder).iterdir() if p.suffix in (".mlc", ".mlx", ".bin", ".json"))
        assert names == ["group-000000.mlc", "group-000000.mlx", "group-000002.mlc", "group-000002.mlx"], names
    m = r.trace.messages
    assert sorted(zip(m.src.tolist(), m.dst.tolist())) == sorted((r_, (r_ + 1) % NP) for r_ in range(NP) for _ in range(N))
    assert (m.bytes == SIZE).all()
    assert r.memory.local == {0: 2, 1: 2, 2: 2, 3: 2}


def ompi_eager_limit(btl: str) -> int:
    """An Open MPI BTL's eager limit as ompi_info reports it (not through mpilens)."""
    out = subprocess.run(["ompi_info", "--param", "btl", btl, "--level", "9", "--parsable"], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if f"btl_{btl}_eager_limit:value:" in line:
            return int(line.rsplit(":", 1)[1])
    raise AssertionError(f"ompi_info names no btl_{btl}_eager_limit")


def test_counters_eager_limit_per_transport(hosts, tmp_path):
    """Open MPI: a message between the shared-memory eager limit (vader) and the TCP one is eager
    to a rank of another host and not to one of the same host. In the ring, ranks 1 and 3 send
    across hosts, ranks 0 and 2 within theirs."""
    shm, tcp = ompi_eager_limit("vader"), ompi_eager_limit("tcp")
    size = (shm + tcp) // 2
    assert shm < size < tcp
    c = run("openmpi", tmp_path, "counters", [str(example("openmpi", "ring")), "20", str(size)]).counters
    assert c.layout.doc["eager"]["shm_limit"] == shm and c.layout.doc["eager"]["net_limit"] == tcp
    assert [c.value("EAGER_MESSAGES", r) for r in range(NP)] == [0, 20, 0, 20]
    assert [c.value("NOT_EAGER_MESSAGES", r) for r in range(NP)] == [20, 0, 20, 0]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_netpipe_across_hosts(hosts, mpi, tmp_path):
    """NetPIPE (Debian's build) between two hosts, in trace mode: NetPIPE's known traffic, one rank
    on each host, and its ping-pong's arrows forward beyond the clock alignment's error bound."""
    lo, hi, reps = 2, 4096, 8
    r = run(mpi, tmp_path, "trace", [NETPIPE[mpi], "-l", str(lo), "-u", str(hi), "-p", "0", "-n", str(reps),
                                      "-o", str(tmp_path / "np.out")], per_host=1)
    assert [x["host"] for x in r.profile["ranks"]] == ["mlh1", "mlh2"]
    check_netpipe_profile(r.profile, netpipe_sizes(tmp_path / "np.out"), lo, reps)
    tl = r.trace
    bound = tl.clock_error_s["mlh2"]
    m = tl.messages
    assert m.unmatched_sends == 0 and m.unmatched_recvs == 0
    assert len(m.send_ev) == sum(r.profile["functions"]["MPI_Send"]["calls"])
    assert (m.recv_t - m.send_t).min() >= -bound, ((m.recv_t - m.send_t).min(), bound)
