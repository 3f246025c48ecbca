"""A run directory nobody can turn against its owner, and one run per directory (issue: nothing
overwritten).

Someone who can write into a run directory (a shared project folder, /tmp) plants symbolic links
at the names the job will write, or at its folders, pointing at files of the job's owner; the job
must never write through them: the targets stay byte for byte as they were, the application's
output and exit status are its own, and the runtime names each file it could not write. Two runs
naming one directory: exactly one of them writes into it. The oracle is the file system: the
targets' bytes, what each directory holds, and the ring example's known traffic."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import BUILD, MPILENS, ROOT, example, fn, job_env, launcher

# names a job writes (runtime/spec/rundir.yaml) and folders it writes into
PLANTED_FILES = ["meta.json", "profile.json", "trace/rank-000000.bin", "counters/rank-000001.bin",
                 "counters/layout.json", "live/rank-000000.spc", "maps/rank-000000.json",
                 "ranks/rank-000000.partial"]
PLANTED_FOLDERS = ["pcontrol", "intervals"]


def preloaded(mpi: str, np: int, prog: list[str], **settings: str) -> subprocess.CompletedProcess:
    """The runtime preloaded by hand through the launcher, as mpilens run would not check anything."""
    forwarded = {"LD_PRELOAD": str(BUILD / "lib" / f"libmpilens-{mpi}.so"), **settings}
    flag = "-x" if mpi == "openmpi" else "-genv"
    flags = [x for k, v in forwarded.items() for x in ((flag, f"{k}={v}") if mpi == "openmpi" else (flag, k, v))]
    return subprocess.run(launcher(mpi, np) + flags + prog, env=job_env(), capture_output=True, text=True, timeout=300)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.mark.mpi
def test_links_planted_in_the_run_directory_are_never_written_through(mpi, tmp_path):
    victims = tmp_path / "home"
    victims.mkdir()
    for i in range(len(PLANTED_FILES)):
        (victims / f"file{i}").write_text(f"the owner's file {i}\n")
    (victims / "folder").mkdir()
    before = snapshot(victims)
    out = tmp_path / "shared" / "run"
    out.mkdir(parents=True)
    for i, name in enumerate(PLANTED_FILES):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).symlink_to(victims / f"file{i}")
    for name in PLANTED_FOLDERS:
        (out / name).symlink_to(victims / "folder")
    prog = [str(example(mpi, "pcontrol")), "snapshot", "3", "3"]
    plain = subprocess.run(launcher(mpi, 2) + prog, env=job_env(), capture_output=True, text=True, timeout=300)
    job = preloaded(mpi, 2, prog, MPILENS_OUTPUT=str(out), MPILENS_MODE="trace,counters")
    assert (job.returncode, job.stdout) == (plain.returncode, plain.stdout), job.stderr
    assert snapshot(victims) == before, "a file outside the run directory was written"
    ours = [line for line in job.stderr.splitlines() if line.startswith("mpilens: ")]
    assert any("trace" in line for line in ours), job.stderr  # rank 0's trace file was a link
    assert any("counter" in line for line in ours), job.stderr
    assert "Traceback" not in job.stderr
    # what could be written is the run's, and whole: a link at a whole file's name is replaced by it
    for name in ("meta.json", "profile.json"):
        assert not (out / name).is_symlink() and json.loads((out / name).read_text())["schema"].startswith("mpilens.")
    assert (out / "trace" / "rank-000001.bin").is_file()
    report = subprocess.run([str(MPILENS), "report", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert "Traceback" not in report.stderr


@pytest.mark.mpi
def test_a_directory_claimed_by_one_run_is_refused_to_another(mpi, tmp_path):
    """Preloaded by hand twice with one MPILENS_OUTPUT: the second run is refused at MPI_Init (one
    line, the application runs unmeasured with its own output), the first run's files untouched."""
    out = tmp_path / "run"
    ring = [str(example(mpi, "ring"))]
    first = preloaded(mpi, 2, ring, MPILENS_OUTPUT=str(out))
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    second = preloaded(mpi, 3, ring + ["4"], MPILENS_OUTPUT=str(out))
    assert second.returncode == 0 and "ring: 4 messages" in second.stdout, second.stdout + second.stderr
    ours = [line for line in second.stderr.splitlines() if "mpilens" in line]
    assert len(ours) == 1 and "belongs to another run" in ours[0] and "without mpilens" in ours[0], second.stderr
    assert snapshot(out) == before
    profile = json.loads((out / "profile.json").read_text())
    assert profile["nranks"] == 2 and fn(profile, "MPI_Send", "calls") == [10, 10]


@pytest.mark.mpi
def test_a_token_that_is_not_the_claims_is_refused(mpi, tmp_path):
    """The runtime told by mpilens run (MPILENS_RUN_TOKEN) to write where another run's claim is."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "claim.json").write_text(json.dumps({"schema": "mpilens.claim/1", "token": "a" * 32}) + "\n")
    job = preloaded(mpi, 2, [str(example(mpi, "ring"))], MPILENS_OUTPUT=str(out), MPILENS_RUN_TOKEN="b" * 32)
    assert job.returncode == 0, job.stderr
    assert "not the one mpilens run claimed" in job.stderr
    assert sorted(p.name for p in out.iterdir()) == ["claim.json"]


@pytest.mark.mpi
def test_two_mpilens_runs_started_together_on_one_directory(mpi, tmp_path):
    """Exactly one of them runs into the directory; the other refuses with one line."""
    out = tmp_path / "same"
    results: dict[int, subprocess.CompletedProcess] = {}
    barrier = threading.Barrier(2)

    def go(np: int) -> None:
        barrier.wait()
        results[np] = subprocess.run([str(MPILENS), "run", "--mpi", mpi, "-o", str(out), "--",
                                      *launcher(mpi, np), str(example(mpi, "ring"))],
                                     env=job_env(), capture_output=True, text=True, timeout=300)

    threads = [threading.Thread(target=go, args=(np,)) for np in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [np for np, p in results.items() if p.returncode == 0]
    assert len(ok) == 1, {np: p.stderr for np, p in results.items()}
    loser = results[5 - ok[0]]
    lines = [line for line in loser.stderr.splitlines() if line.startswith("mpilens: ")]
    assert loser.returncode == 2 and len(lines) == 1, loser.stderr
    assert "another run" in lines[0] or "not empty" in lines[0], lines[0]
    profile = json.loads((out / "profile.json").read_text())
    assert profile["nranks"] == ok[0] and fn(profile, "MPI_Send", "calls") == [10] * ok[0]
    claim = json.loads((out / "claim.json").read_text())
    assert claim["schema"] == "mpilens.claim/1" and claim["by"] == "mpilens run" and len(claim["token"]) == 32


@pytest.mark.mpi
def test_live_dir_must_be_empty_and_is_never_made_with_parents(mpi, tmp_path):
    """MPILENS_LIVE_DIR: a non-empty folder is refused (the live files stay in the run directory);
    a missing parent is not created."""
    ring = [str(example(mpi, "ring"))]
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "rank-000000.spc").symlink_to(tmp_path / "victim")
    (tmp_path / "victim").write_text("mine\n")
    out = tmp_path / "run1"
    job = preloaded(mpi, 2, ring, MPILENS_OUTPUT=str(out), MPILENS_MODE="counters", MPILENS_LIVE_DIR=str(busy))
    assert job.returncode == 0, job.stderr
    assert "is not empty" in job.stderr and (tmp_path / "victim").read_text() == "mine\n"
    assert sorted(p.name for p in busy.iterdir()) == ["rank-000000.spc"]
    layout = json.loads((out / "counters" / "layout.json").read_text())
    assert Path(layout["live_dir"]) == out / "live" and (out / "live" / "rank-000001.spc").is_file()

    deep = tmp_path / "no" / "such" / "live"
    out = tmp_path / "run2"
    job = preloaded(mpi, 2, ring, MPILENS_OUTPUT=str(out), MPILENS_MODE="counters", MPILENS_LIVE_DIR=str(deep))
    assert job.returncode == 0 and "cannot create MPILENS_LIVE_DIR" in job.stderr, job.stderr
    assert not (tmp_path / "no").exists()

    fresh = tmp_path / "fresh"
    out = tmp_path / "run3"
    job = preloaded(mpi, 2, ring, MPILENS_OUTPUT=str(out), MPILENS_MODE="counters", MPILENS_LIVE_DIR=str(fresh))
    assert job.returncode == 0 and "mpilens" not in job.stderr, job.stderr
    assert sorted(p.name for p in fresh.iterdir()) == ["layout.json", "rank-000000.spc", "rank-000001.spc"]


def test_no_runtime_source_opens_a_file_by_path_for_writing():
    """Every write of the runtime goes through files.c's safe layer: no open(), fopen() or rename()
    of a path elsewhere (reads of /proc and the libraries the runtime loads excepted)."""
    allowed = {"files.c", "merge_main.c", "memory_interpose.c"}
    call = re.compile(r"\b(fopen|open|rename|unlink|mkdir|creat)\s*\(")
    # the one folder each base is: the run directory and MPILENS_LIVE_DIR, named by the user (and
    # the run directory's path made on a host that does not share rank 0's file system)
    user_named = {"mkdir(name, 0777)", "mkdir(dir, 0777)", "mkdir(part, 0777)"}
    found = []
    for src in sorted((ROOT / "runtime" / "src").glob("*.c")):
        if src.name in allowed:
            continue
        for n, line in enumerate(src.read_text().splitlines(), 1):
            code = re.sub(r"/\*.*?(\*/|$)", "", line.split("//")[0])
            if code.lstrip().startswith("*"):  # inside a comment
                continue
            if call.search(code) and "/proc/" not in code and not any(u in code for u in user_named):
                found.append(f"{src.name}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_an_output_is_replaced_whole_or_not_at_all(tmp_path):
    """safefile.replacing, which every report and export writes through: a write that fails half way
    leaves the previous file as it was and no temporary file behind; a link planted at the output's
    name is replaced, its target never written."""
    from mpilens import safefile

    page = tmp_path / "report.html"
    page.write_text("the previous report\n")
    with pytest.raises(RuntimeError), safefile.replacing(page) as f:
        f.write("half of a new report")
        raise RuntimeError("the report failed here")
    assert page.read_text() == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    page.unlink()
    page.symlink_to(victim)
    safefile.write_text(page, "r\udce9port\n")  # a name's byte that was not UTF-8, shown escaped
    assert victim.read_text() == "mine\n" and not page.is_symlink()
    assert page.read_text() == "r\\xe9port\n"


@pytest.mark.mpi
def test_a_malformed_command_is_not_copied_into_meta(mpi, tmp_path):
    """MPILENS_COMMAND (set by mpilens run; here by hand) that is not a JSON array of strings: meta.json
    stays valid JSON with the program's own command line, and one line says so."""
    out = tmp_path / "run"
    ring = [str(example(mpi, "ring"))]
    job = preloaded(mpi, 2, ring, MPILENS_OUTPUT=str(out), MPILENS_COMMAND='["a"], "finalized": true, "x": ["')
    assert job.returncode == 0, job.stderr
    assert "MPILENS_COMMAND is not a JSON array of strings" in job.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["command"][0].endswith("/ring") and "x" not in meta


@pytest.mark.mpi
def test_a_copied_run_reads_its_own_live_files(mpi, tmp_path):
    """The live folder of a run directory is read where the run directory is now (a copy's own), not
    where the job wrote it."""
    from mpilens import counters_spc

    out = tmp_path / "run"
    job = preloaded(mpi, 2, [str(example(mpi, "ring"))], MPILENS_OUTPUT=str(out), MPILENS_MODE="counters")
    assert job.returncode == 0, job.stderr
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    assert Path(counters_spc.load_layout(out).doc["live_dir"]) == out / "live"
    assert Path(counters_spc.load_layout(copy).doc["live_dir"]) == copy / "live"
