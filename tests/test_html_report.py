"""The HTML report opened in headless Chromium: no console errors, no network requests, the
charts and tables present with the right numbers; large profiles stay small and fast."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path

import pytest

from conftest import MPILENS, job_env, lammps_indent, launcher, run_example

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (Debian's), driven with Playwright."""
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is missing: `make deps` installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"])
        yield b
        b.close()


def report_html(rundir: Path, out: Path) -> Path:
    p = subprocess.run([str(MPILENS), "report", str(rundir), "--html", str(out), "--quiet"], capture_output=True,
                       text=True, env=job_env())
    assert p.returncode == 0, p.stderr
    return out


class Page:
    """A report opened in the browser, with what it logged and requested."""

    def __init__(self, browser, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-rendered=true]", timeout=60000)

    def assert_clean(self) -> None:
        assert self.errors == []
        assert self.requests == [self.url], "the report must not load anything else"

    def close(self) -> None:
        self.page.close()


def test_known_program(tmp_path, browser):
    """The ring example: every number the page shows can be derived from its arguments."""
    n, size, np = 5, 2048, 4
    job = run_example("openmpi", "ring", np, tmp_path, [str(n), str(size)])
    page = Page(browser, report_html(job.rundir, tmp_path / "report.html"))
    page.assert_clean()
    p = page.page

    row = p.locator("#functions-table tbody tr", has_text="MPI_Send").first
    cells = row.locator("td").all_inner_texts()
    assert cells[0] == "MPI_Send" and cells[2] == str(n * np)
    assert cells[10] == f"{n * np * size // 1024} KiB"  # sent, summed over ranks

    matrix = p.evaluate("ML.data.matrix")
    assert matrix["n"] == np and matrix["block"] == 1
    assert matrix["cells"] == [[r, (r + 1) % np, n * size, n] for r in sorted(range(np), key=lambda r: (r, (r + 1) % np))]

    # hover the cell 0 -> 1: the tooltip gives its bytes and messages
    canvas = p.locator("#matrix-chart canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    side = box["width"] - 40 - 110  # the matrix square: canvas minus axis margin and colour legend
    p.mouse.move(box["x"] + 40 + 1.5 * side / np, box["y"] + 0.5 * side / np)
    tip = p.locator(".ml-tip").inner_text()
    assert tip.startswith("0 \u2192 1") and f"{n * size // 1024} KiB in {n} messages" in tip, tip

    assert p.locator("[data-chart=bars] canvas").count() == 1
    assert p.locator("#regions-table tbody tr").count() == 2
    p.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    page.close()


def test_lammps_report(tmp_path, browser):
    """A real application: LAMMPS' indent example on 4 ranks (its two runs of 2,000 steps each:
    as shipped, 30,000 each took 112 s beside the other tests, 9 s alone)."""
    mpi, args = lammps_indent(tmp_path / "indent", 2000)
    p = subprocess.run([str(MPILENS), "run", "-o", str(tmp_path / "run"), "--", *launcher(mpi, 4), *args,
                        "-log", "none"], cwd=tmp_path / "indent", env=job_env(), capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    profile = json.loads((tmp_path / "run" / "profile.json").read_text())
    page = Page(browser, report_html(tmp_path / "run", tmp_path / "lammps.html"))
    page.assert_clean()
    rows = page.page.locator("#functions-table tbody tr").count()
    assert rows == len(profile["functions"])
    assert page.page.locator("#matrix-chart canvas").count() == 1
    assert page.page.locator("[data-chart=hist] canvas").count() == 1
    shot = tmp_path / "lammps.png"
    page.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000  # a page with charts, not a blank one
    page.close()


def synthetic_profile(nranks: int) -> dict:
    """A profile shaped like a 3-D stencil code on nranks ranks (nranks a cube)."""
    side = round(nranks ** (1 / 3))
    assert side ** 3 == nranks
    funcs = {}
    names = ["MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Allreduce", "MPI_Bcast", "MPI_Barrier", "MPI_Reduce",
             "MPI_Comm_rank", "MPI_Comm_size", "MPI_Cart_create", "MPI_Gather", "MPI_Wait", "MPI_Test",
             "MPI_Alltoall", "MPI_Scatter", "MPI_Send", "MPI_Recv", "MPI_Sendrecv", "MPI_Allgather", "MPI_Scan"]
    for k, name in enumerate(names):
        t = [0.001 * (k + 1) * (1 + (r % 7) / 10) for r in range(nranks)]
        funcs[name] = {"class": "p2p" if k < 3 else "collective", "calls": [100 * (k + 1)] * nranks, "time_s": t,
                       "min_s": [x / 1000 for x in t], "max_s": [x / 10 for x in t],
                       "bytes_sent": [4096 * (k + 1)] * nranks, "bytes_recv": [4096 * (k + 1)] * nranks}
    matrix = []
    for r in range(nranks):
        x, y, z = r % side, (r // side) % side, r // side // side
        for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
            d = ((x + dx) % side) + ((y + dy) % side) * side + ((z + dz) % side) * side * side
            matrix.append({"src": r, "dst": d, "messages": 1000, "bytes": 8_192_000})
    ranks = [{"rank": r, "host": f"node{r // 64:03d}", "wall_time_s": 10.0, "mpi_time_s": 2.0 + (r % 13) / 10,
              "init_time_s": 0.5, "threads": 1} for r in range(nranks)]
    sizes = {"MPI_Isend": [{"bin": 14, "min_bytes": 8192, "max_bytes": 16383, "calls": [100] * nranks,
                            "time_s": [0.0] * nranks}]}
    regions = [{"name": "solve", "visits": [100] * nranks, "time_s": [9.0] * nranks,
                "functions": {"MPI_Waitall": funcs["MPI_Waitall"]}, "regions": []}]
    return {"schema": "mpilens.profile/1", "tool": {"name": "mpilens"}, "complete": True, "nranks": nranks,
            "wall_time_s": 10.0, "ranks": ranks, "functions": funcs, "message_sizes": sizes, "matrix": matrix,
            "regions": regions, "dropped": {}}


def test_4096_ranks(tmp_path, browser):
    """4,096 ranks: under 10 MB of HTML, drawn in under 5 s; the matrix is shown in blocks."""
    run = tmp_path / "big"
    run.mkdir()
    (run / "profile.json").write_text(json.dumps(synthetic_profile(4096)))
    (run / "meta.json").write_text(json.dumps({"nranks": 4096, "command": ["mpirun", "-np", "4096", "./stencil3d"]}))
    out = report_html(run, tmp_path / "big.html")
    assert out.stat().st_size < 10 * 1024 * 1024
    t0 = time.monotonic()
    page = Page(browser, out)
    elapsed = time.monotonic() - t0
    page.assert_clean()
    render_ms = int(page.page.evaluate("document.body.dataset.renderMs"))
    assert render_ms < 5000 and elapsed < 30, (render_ms, elapsed)
    matrix = page.page.evaluate("ML.data.matrix")
    assert matrix["block"] == 16 and matrix["n"] == 256
    assert sum(c[3] for c in matrix["cells"]) == 4096 * 6 * 1000  # every message is in some block
    page.close()


@pytest.mark.mpi
def test_png_figures(tmp_path):
    job = run_example("mpich", "ring", 3, tmp_path, ["4", "100"])
    p = subprocess.run([str(MPILENS), "report", str(job.rundir), "--png", str(tmp_path / "png"), "--quiet"],
                       capture_output=True, text=True, env=job_env())
    assert p.returncode == 0, p.stderr
    from PIL import Image

    names = sorted(f.name for f in (tmp_path / "png").iterdir())
    assert names == ["functions.png", "matrix.png", "ranks.png", "regions.png", "sizes.png"]
    for f in (tmp_path / "png").iterdir():
        with Image.open(f) as im:
            assert im.format == "PNG" and im.size[0] >= 800


def test_timeline_of_a_large_trace_is_drawn_per_time_bin(tmp_path, browser):
    """ring 12000 64 on 4 ranks in trace mode: 96,000 sends and receives, more than the page draws one
    by one, so the overview is per time bin; hovering rank 0's row near the middle of the run names
    the share of the bin in point-to-point calls (the ring does nothing else). The bin hovered is
    one amid bins where rank 0 was in MPI: on a busy machine a rank loses its core between two
    calls for longer than a bin (112 us: beside a second suite, the middle bin had no call)."""
    job = run_example("openmpi", "ring", 4, tmp_path, ["12000", "64"], settings={"MPILENS_MODE": "trace"})
    page = Page(browser, report_html(job.rundir, tmp_path / "trace.html"))
    page.assert_clean()
    p = page.page
    data = p.evaluate("ML.data.timeline")
    assert data["bins"]["n"] >= 16 and len(data["bins"]["shares"]) == len(data["rows"]) == 4
    assert "the share of the bin in each class of calls" in p.locator("#timeline").inner_text()
    assert "mpilens export perfetto" in p.locator("#timeline").inner_text()
    # rank 0's bins with a call in them, from the shares the page draws ([class][bin], base64)
    n = data["bins"]["n"]
    share = base64.b64decode(data["bins"]["shares"][0])
    busy = [any(share[c * n + k] for c in range(len(share) // n)) for k in range(n)]
    amid = [k for k in range(3, n - 3) if all(busy[k - 3:k + 4])]
    assert amid, "no seven bins in a row with a call of rank 0"
    k = min(amid, key=lambda k: abs(k - n / 2))
    canvas = p.locator("#timeline-chart canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    # the chart's time axis: 90 px of labels on the left, 8 on the right (report.js tAt)
    at = (k + 0.5) * data["bins"]["width"] / data["end"]
    p.mouse.move(box["x"] + 90 + (box["width"] - 98) * at, box["y"] + 4 + 20)
    tip = p.locator(".ml-tip").inner_text()
    assert tip.startswith("rank 0, the ") and "in MPI: p2p" in tip, tip
    assert (tmp_path / "trace.html").stat().st_size < 10e6
    page.close()
