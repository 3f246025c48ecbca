"""The Python API users script against: mpilens.load and mpilens.frames."""

import pytest

import mpilens
from conftest import sources


@pytest.mark.parametrize("src", sources())
def test_frames_match_profile(src, tmp_path):
    job = src.run("ring", tmp_path)
    (n, size), np = map(int, job.args), job.np
    run = mpilens.load(job.rundir)
    df = mpilens.frames.functions(run)
    send = df[df.function == "MPI_Send"]
    assert list(send["rank"]) == list(range(np))
    assert list(send["calls"]) == [n] * np and list(send["bytes_sent"]) == [n * size] * np
    regions = mpilens.frames.functions(run, by_region=True)
    assert set(regions.region) == {"ring", "check"}
    assert regions[(regions.region == "ring") & (regions.function == "MPI_Recv")]["bytes_recv"].sum() == np * n * size
    m = mpilens.frames.matrix(run)
    assert sorted(zip(m.src, m.dst, m.messages, m.bytes)) == [(r, (r + 1) % np, n, n * size) for r in range(np)]
    assert list(mpilens.frames.ranks(run)["rank"]) == list(range(np))
    sizes = mpilens.frames.message_sizes(run)
    assert sizes[(sizes.function == "MPI_Send")]["bin"].unique().tolist() == [size.bit_length()]


def test_command_line_loads_no_numerical_stack():
    """`mpilens run` stays alive next to the job for its whole duration: registering the commands
    must not import numpy (whose OpenBLAS starts threads that spin on the cores the ranks need) or
    pandas/scipy/matplotlib; the commands that need them import them when they run."""
    import subprocess
    import sys

    code = ("import sys\nsys.argv = ['mpilens', '--help']\nimport mpilens.cli\n"
            "try:\n    mpilens.cli.main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]", out


def test_text_report_loads_no_plotting_or_fitting_library(tmp_path):
    """The text and JSON reports (the test suite runs about two hundred, a user one per run) do
    without matplotlib and scipy: the sections that draw or fit a model load them when they do,
    not when the report imports every section (0.45 s of each report's 0.8 s)."""
    import shutil
    import subprocess
    import sys

    from conftest import RUNS

    # copies: a report writes its caches into the run directory
    runs = [str(shutil.copytree(p, tmp_path / p.name, symlinks=True)) for p in sorted(RUNS.iterdir())
            if (p / "meta.json").is_file()]
    assert len(runs) >= 20
    code = ("import contextlib, io, sys\nimport mpilens.cli\n"
            f"for run in {runs!r}:\n"
            "    for args in (['report', run], ['report', '--json', run]):\n"
            "        with contextlib.redirect_stdout(io.StringIO()):\n"
            "            assert mpilens.cli.main(args) == 0, args\n"
            "print(sorted(m for m in ('scipy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]", out
