"""Call sites (MPILENS_CALLSITE_DEPTH): each MPI call counted at the line of the program that makes
it, symbolised by `mpilens report`. The expected lines come from marker comments in the example
programs (`site:NAME`), the expected counts from the programs' loops; under Open MPI and MPICH."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import MPILENS, ROOT, example, job_env, mpirun, run_example

CONTRACT = {"mpi_function", "file", "line", "symbol", "module", "calls", "time_s", "bytes_sent", "bytes_recv"}


def markers(path: Path) -> dict[str, int]:
    """Line of each `site:NAME` marker of a source file."""
    out = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = re.search(r"site:([\w-]+)", line)
        if m and "site:NAME" not in line:
            out[m.group(1)] = i
    return out


def report_json(run_dir: Path) -> dict:
    p = subprocess.run([str(MPILENS), "report", str(run_dir), "--json"], capture_output=True, text=True, env=job_env(),
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def site(sites: list[dict], function: str, file: str, line: int) -> dict:
    found = [s for s in sites if s["mpi_function"] == function and s["file"] and Path(s["file"]).name == file
             and s["line"] == line]
    assert len(found) == 1, (function, file, line, [(s["mpi_function"], s["file"], s["line"]) for s in sites])
    return found[0]


def test_c_program_and_dlopened_pic_library(mpi, tmp_path):
    iters, np = 12, 3
    job = run_example(mpi, "callsites", np, tmp_path, [str(iters)])
    sites = report_json(job.rundir)["callsites"]
    for s in sites:
        assert CONTRACT <= set(s), s
        assert "path" not in s  # depth 1
        for key in ("calls", "time_s", "bytes_sent", "bytes_recv"):
            assert len(s[key]) == np
    src = markers(ROOT / "examples" / "c" / "callsites.c")
    lib = markers(ROOT / "examples" / "c" / "lib" / "sites.c")
    expect = {"isend": "MPI_Isend", "recv": "MPI_Recv", "wait": "MPI_Wait", "barrier": "MPI_Barrier",
              "inner": "MPI_Allreduce"}
    for name, function in expect.items():
        s = site(sites, function, "callsites.c", src[name])
        assert s["calls"] == [iters] * np, (name, s)
        assert s["module"] == str(example(mpi, "callsites"))
    assert site(sites, "MPI_Barrier", "callsites.c", src["barrier2"])["calls"] == [1] * np
    assert site(sites, "MPI_Allreduce", "callsites.c", src["inner"])["symbol"] == "inner"
    # bytes of the nonblocking send go to the line that started it (256 doubles per call)
    assert site(sites, "MPI_Isend", "callsites.c", src["isend"])["bytes_sent"] == [iters * 256 * 8] * np
    assert site(sites, "MPI_Recv", "callsites.c", src["recv"])["bytes_recv"] == [iters * 256 * 8] * np
    # the library opened with dlopen, at an address chosen at run time
    s = site(sites, "MPI_Sendrecv_replace", "sites.c", lib["lib"])
    assert s["symbol"] == "sites_lib_ring" and s["calls"] == [iters] * np
    assert Path(s["module"]).name == "libsites.so"
    assert s["bytes_sent"] == [iters * 64 * 4] * np
    # the sites of a function add up to the function's calls
    prof = job.profile
    for function in ("MPI_Barrier", "MPI_Isend", "MPI_Wait"):
        per_rank = [sum(x["calls"][r] for x in sites if x["mpi_function"] == function) for r in range(np)]
        assert per_rank == prof["functions"][function]["calls"]
    # each rank's memory map, with build ids and the dlopen'ed library
    maps = sorted((job.rundir / "maps").glob("rank-*.json"))
    assert len(maps) == np
    m = json.loads(maps[0].read_text())
    assert m["schema"] == "mpilens.maps/1"
    libs = [x for x in m["modules"] if x["path"].endswith("libsites.so")]
    assert libs and libs[0]["bias"] > 0 and len(libs[0]["build_id"]) == 40
    # the library sat at a different address in each rank (ASLR), yet its site is one site of all ranks
    biases = {x["bias"] for p in maps for x in json.loads(p.read_text())["modules"] if x["path"].endswith("libsites.so")}
    if Path("/proc/sys/kernel/randomize_va_space").read_text().strip() != "0":
        assert len(biases) == np, biases
    # the symbolised sites are cached in the run directory
    assert json.loads((job.rundir / "callsites.json").read_text())["schema"] == "mpilens.callsites/1"
    # the text report's section, and the HTML page's table with a row per site
    html = tmp_path / "report.html"
    p = subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html)], capture_output=True, text=True,
                       env=job_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    text = p.stdout[p.stdout.index("@ Call sites"):]
    assert f"callsites.c:{src['recv']}" in text and f"sites.c:{lib['lib']}" in text
    assert "@ Heaviest call sites of the top functions" in text
    page = html.read_text()
    table = page[page.index('id="callsites-table"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == len(sites) + 1
    assert f"callsites.c:{src['wait']}" in table


def test_symbolisation_is_cached_until_the_module_changes(tmp_path):
    """symbolise() keeps its results in the cache file and reuses them while the module's size and
    modification time are unchanged; a changed module is symbolised again."""
    from mpilens.callsites import symbolise

    module = tmp_path / "callsites"
    shutil.copy2(example("openmpi", "callsites"), module)
    src = markers(ROOT / "examples" / "c" / "callsites.c")
    nm = subprocess.run(["nm", str(module)], capture_output=True, text=True, check=True).stdout
    inner = int(next(line.split()[0] for line in nm.splitlines() if line.endswith(" inner")), 16)
    cache = tmp_path / "callsites.json"
    # an address inside inner(): the function, and a line of callsites.c
    first = symbolise({(str(module), inner + 4)}, cache)[(str(module), inner + 4)]
    assert first["symbol"] == "inner" and Path(first["file"]).name == "callsites.c"
    assert abs(first["line"] - src["inner"]) < 5
    doc = json.loads(cache.read_text())
    doc["modules"][str(module)]["addresses"][str(inner + 4)]["symbol"] = "from-the-cache"
    cache.write_text(json.dumps(doc))
    assert symbolise({(str(module), inner + 4)}, cache)[(str(module), inner + 4)]["symbol"] == "from-the-cache"
    os.utime(module, (1, 1))
    assert symbolise({(str(module), inner + 4)}, cache)[(str(module), inner + 4)]["symbol"] == "inner"


def test_depth_three_paths_through_three_functions(mpi, tmp_path):
    job = run_example(mpi, "callsites", 2, tmp_path, ["5"], settings={"MPILENS_CALLSITE_DEPTH": "3"})
    sites = report_json(job.rundir)["callsites"]
    src = markers(ROOT / "examples" / "c" / "callsites.c")
    s = site(sites, "MPI_Allreduce", "callsites.c", src["inner"])
    assert [(f["symbol"], f["line"]) for f in s["path"]] == [("inner", src["inner"]), ("middle", src["middle"]),
                                                              ("outer", src["outer"])]
    assert s["calls"] == [5, 5]
    assert all(len(x["path"]) <= 3 for x in sites)
    # the library's site: its caller in the program is the second frame
    lib = markers(ROOT / "examples" / "c" / "lib" / "sites.c")
    s = site(sites, "MPI_Sendrecv_replace", "sites.c", lib["lib"])
    assert s["path"][1]["symbol"] == "main" and Path(s["path"][1]["file"]).name == "callsites.c"


def test_cxx_names_are_demangled(mpi, tmp_path):
    job = run_example(mpi, "sites", 2, tmp_path)
    sites = report_json(job.rundir)["callsites"]
    src = markers(ROOT / "examples" / "cxx" / "sites.cpp")
    s = site(sites, "MPI_Sendrecv", "sites.cpp", src["cxx-sendrecv"])
    assert s["symbol"].startswith("halo::Exchanger::exchange(int, int)"), s["symbol"]
    assert s["calls"] == [10, 10]
    s = site(sites, "MPI_Allreduce", "sites.cpp", src["cxx-allreduce"])
    assert s["symbol"].startswith("long halo::reduce_sum<long>(long)"), s["symbol"]


def test_fortran_use_mpi_and_mpif_h(mpi, tmp_path):
    job = run_example(mpi, "fsites", 2, tmp_path)
    sites = report_json(job.rundir)["callsites"]
    src = markers(ROOT / "examples" / "fortran" / "fsites.f90")
    s = site(sites, "MPI_Sendrecv", "fsites.f90", src["f-sendrecv"])
    assert s["symbol"] == "fsites_work::exchange" and s["calls"] == [10, 10]
    s = site(sites, "MPI_Allreduce", "fsites.f90", src["f-allreduce"])
    assert s["symbol"] == "total" and s["calls"] == [10, 10]
    s = site(sites, "MPI_Barrier", "fsites.f90", src["f-barrier"])
    assert s["symbol"] == "(main program)" and s["calls"] == [10, 10]


@pytest.mark.mpi
def test_depth_zero_records_no_sites(tmp_path):
    job = mpirun("openmpi", 2, [str(example("openmpi", "callsites")), "3"], tmp_path,
                 settings={"MPILENS_CALLSITE_DEPTH": "0"})
    assert "callsites" not in job.profile
    assert "callsites" not in report_json(job.rundir)
    assert not (job.rundir / "maps").exists()


@pytest.mark.mpi
def test_a_full_table_counts_other_sites_and_loses_no_call(tmp_path):
    """A table of 64 entries holds 48 sites: the sites beyond are counted under their function's
    "other sites", and every call is still counted."""
    iters = 4
    job = mpirun("mpich", 2, [str(example("mpich", "callsites")), str(iters), "many"], tmp_path,
                 settings={"MPILENS_CALLSITE_MAX": "64"})
    sites = report_json(job.rundir)["callsites"]
    prof = job.profile
    src = markers(ROOT / "examples" / "c" / "callsites.c")
    many = [s for s in sites if s["mpi_function"] == "MPI_Comm_rank" and s["line"] == src["many"]]
    other = [s for s in sites if s["symbol"] == "(other sites)" and s["mpi_function"] == "MPI_Comm_rank"]
    assert 0 < len(many) < 80 and len(other) == 1
    assert other[0]["file"] is None and other[0]["line"] is None
    total = [sum(s["calls"][r] for s in many + other) for r in range(2)]
    assert total[0] >= (80 - len(many)) * iters
    for function, f in prof["functions"].items():
        mine = [s for s in sites if s["mpi_function"] == function]
        assert [sum(s["calls"][r] for s in mine) for r in range(2)] == f["calls"], function


@pytest.mark.parametrize("mpi_name", ["openmpi"])
@pytest.mark.mpi
def test_frames_callsites(mpi_name, tmp_path):
    import mpilens
    job = run_example(mpi_name, "callsites", 2, tmp_path, ["3"])
    df = mpilens.frames.callsites(mpilens.load(job.rundir))
    src = markers(ROOT / "examples" / "c" / "callsites.c")
    rows = df[(df.mpi_function == "MPI_Wait") & (df.line == src["wait"])]
    assert list(rows["rank"]) == [0, 1] and list(rows["calls"]) == [3, 3]


PYTHON = "/usr/bin/python3"  # Debian's, with python3-mpi4py, python3-h5py-mpi and python3-dev


def mpi4py_mpi() -> str:
    """The MPI that Debian's mpi4py is built for (one of them)."""
    found = subprocess.run([PYTHON, "-c", "import mpi4py.MPI as m; print(m.__file__)"], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.fail(f"mpi4py is not importable by {PYTHON}: `make deps` installs python3-mpi4py\n{found.stderr}")
    libs = subprocess.run(["ldd", found.stdout.strip()], capture_output=True, text=True).stdout
    return "mpich" if "libmpich" in libs else "openmpi"


@pytest.mark.mpi
@pytest.mark.apps
def test_mpi4py_calls_have_their_python_lines(tmp_path):
    """mpi4py: the call site is the Python line that called into mpi4py (read from the
    interpreter, resolved at run time), with depth 2 the Python caller too."""
    python = PYTHON
    mpi = mpi4py_mpi()
    script = ROOT / "examples" / "python" / "python_sites.py"
    src = markers(script)
    iters = 6
    job = mpirun(mpi, 2, [python, str(script), str(iters)], tmp_path, settings={"MPILENS_CALLSITE_DEPTH": "2"})
    sites = report_json(job.rundir)["callsites"]
    s = site(sites, "MPI_Sendrecv", "python_sites.py", src["py-sendrecv"])
    assert s["symbol"] == "exchange" and s["calls"] == [iters, iters]
    assert s["bytes_sent"] == [iters * 100 * 8] * 2
    assert [f["symbol"] for f in s["path"]] == ["exchange", "main"]
    s = site(sites, "MPI_Barrier", "python_sites.py", src["py-barrier"])
    assert s["symbol"] == "main" and s["calls"] == [iters, iters]


def build_extension(mpi: str, out: Path) -> Path:
    """examples/python/mixedext.c built as a CPython extension module for an MPI, in out."""
    cfg = subprocess.run([PYTHON + "-config", "--includes", "--extension-suffix"], capture_output=True, text=True)
    if cfg.returncode != 0:
        pytest.fail(f"{PYTHON}-config failed: `make deps` installs python3-dev\n{cfg.stderr}")
    includes, suffix = cfg.stdout.split("\n")[:2]
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([f"mpicc.{mpi}", "-shared", "-fPIC", "-g", "-O2", *includes.split(),
                        str(ROOT / "examples" / "python" / "mixedext.c"), "-o", str(out / f"mixedext{suffix}")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.apps
def test_mixed_stack_python_c_extension_mpi(mpi, tmp_path):
    """Python calling a C extension that calls MPI: the site is the Python line that called the
    extension, whether the extension holds the GIL during the call (allreduce) or released it
    (ring); with depth 3 the path goes from the MPI call through the extension's two functions to
    that Python line. With the MPI mpi4py is built for, mpi4py initialises MPI and makes calls of
    its own; with the other MPI the extension initialises MPI (no mpi4py in the process)."""
    ext = build_extension(mpi, tmp_path / "ext")
    mode = "mpi4py" if mpi == mpi4py_mpi() else "plain"
    script = ROOT / "examples" / "python" / "mixed_sites.py"
    py, c = markers(script), markers(ROOT / "examples" / "python" / "mixedext.c")
    iters = 4
    argv = [PYTHON, str(script), str(ext), str(iters), mode]

    job = mpirun(mpi, 2, argv, tmp_path / "d1")
    sites = report_json(job.rundir)["callsites"]
    assert not [s for s in sites if s["file"] and Path(s["file"]).name == "mixedext.c"], sites
    s = site(sites, "MPI_Allreduce", "mixed_sites.py", py["mx-allreduce"])
    assert s["symbol"] == "reduce_step" and s["calls"] == [iters] * 2 and s["bytes_sent"] == [iters * 8] * 2
    # rank 0 sends first, rank 1 receives first: two lines of C, one line of Python
    s = site(sites, "MPI_Send", "mixed_sites.py", py["mx-ring"])
    assert s["symbol"] == "main" and s["calls"] == [iters] * 2 and s["bytes_sent"] == [iters * 800] * 2
    s = site(sites, "MPI_Recv", "mixed_sites.py", py["mx-ring"])
    assert s["calls"] == [iters] * 2 and s["bytes_recv"] == [iters * 800] * 2
    assert site(sites, "MPI_Comm_rank", "mixed_sites.py", py["mx-ring"])["calls"] == [iters] * 2
    if mode == "mpi4py":
        assert site(sites, "MPI_Barrier", "mixed_sites.py", py["mx-barrier"])["calls"] == [iters] * 2
    for name, f in job.profile["functions"].items():
        assert [sum(s["calls"][r] for s in sites if s["mpi_function"] == name) for r in range(2)] == f["calls"], name

    job = mpirun(mpi, 2, argv, tmp_path / "d3", settings={"MPILENS_CALLSITE_DEPTH": "3"})
    sites = report_json(job.rundir)["callsites"]

    def path(s: dict) -> list[tuple[str, str, int]]:
        return [(f["symbol"], Path(f["file"]).name, f["line"]) for f in s["path"]]
    s = site(sites, "MPI_Allreduce", "mixed_sites.py", py["mx-allreduce"])
    assert path(s) == [("reduce_sum", "mixedext.c", c["ext-allreduce"]),
                       ("py_allreduce", "mixedext.c", c["ext-py-allreduce"]),
                       ("reduce_step", "mixed_sites.py", py["mx-allreduce"])]
    assert s["symbol"] == "reduce_step" and s["calls"] == [iters] * 2
    sends = {path(s)[0][2]: (path(s), s["calls"]) for s in sites if s["mpi_function"] == "MPI_Send"}
    assert sends == {c[k]: ([("ring_exchange", "mixedext.c", c[k]), ("py_ring", "mixedext.c", c["ext-py-ring"]),
                             ("main", "mixed_sites.py", py["mx-ring"])], calls)
                     for k, calls in (("ext-send", [iters, 0]), ("ext-send-odd", [0, iters]))}
    assert all(s["line"] == py["mx-ring"] and Path(s["file"]).name == "mixed_sites.py" for s in sites
               if s["mpi_function"] == "MPI_Send")
    if mode == "mpi4py":  # mpi4py's own call: no native frame, the Python callers
        s = site(sites, "MPI_Barrier", "mixed_sites.py", py["mx-barrier"])
        assert path(s) == [("main", "mixed_sites.py", py["mx-barrier"]), ("<module>", "mixed_sites.py", py["mx-main"])]


@pytest.mark.mpi
@pytest.mark.apps
def test_h5py_collective_write_sites_are_the_scripts_lines(tmp_path):
    """A real mixed stack: h5py (Debian's python3-h5py-mpi) writing a dataset collectively, its
    MPI-IO calls made inside the HDF5 C library. The sites are the script's lines that called
    h5py (h5py's own Python layer is library code, skipped like the MPI library's frames)."""
    mpi = mpi4py_mpi()  # h5py's MPI support goes through mpi4py, built for the same MPI
    found = subprocess.run([PYTHON, "-c", "import h5py; assert h5py.get_config().mpi"], capture_output=True, text=True,
                           env={**os.environ, "H5PY_ALWAYS_USE_MPI": "1"})  # Debian's h5py: else serial outside mpirun
    if found.returncode != 0:
        pytest.fail(f"h5py with MPI is not importable by {PYTHON}: `make deps` installs python3-h5py-mpi\n"
                    f"{found.stderr}")
    script = ROOT / "examples" / "python" / "h5py_sites.py"
    src = markers(script)
    rows = 500
    job = mpirun(mpi, 2, [PYTHON, str(script), str(tmp_path / "x.h5"), str(rows)], tmp_path)
    sites = report_json(job.rundir)["callsites"]
    s = site(sites, "MPI_File_open", "h5py_sites.py", src["h5-open"])
    assert s["symbol"] == "write" and s["calls"] == [1, 1]
    s = site(sites, "MPI_File_write_at_all", "h5py_sites.py", src["h5-write"])
    assert s["calls"] == [1, 1] and s["bytes_sent"] == [rows * 16 * 8] * 2
    assert site(sites, "MPI_File_close", "h5py_sites.py", src["h5-close"])["calls"] == [1, 1]
    io = [s for s in sites if s["mpi_function"].startswith("MPI_File_")]
    assert {(Path(s["file"]).name, s["line"]) for s in io} <= {("h5py_sites.py", src[k])
                                                              for k in ("h5-open", "h5-write", "h5-close")}
    assert not [s for s in sites if s["file"] and "/h5py/" in s["file"]]


@pytest.mark.mpi
def test_hatchet_call_path_tree(tmp_path):
    """`mpilens export hatchet --tree callpaths`: main -> frames from the outermost in -> MPI
    function; read back by Hatchet, the depth-3 path of the example is a chain of its functions."""
    import hatchet as ht

    job = run_example("openmpi", "callsites", 2, tmp_path, ["4"], settings={"MPILENS_CALLSITE_DEPTH": "3"})
    out = tmp_path / "paths.json"
    p = subprocess.run([str(MPILENS), "export", "hatchet", str(job.rundir), "--tree", "callpaths", "-o", str(out)],
                       capture_output=True, text=True, env=job_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    gf = ht.GraphFrame.from_json(out.read_text())
    src = markers(ROOT / "examples" / "c" / "callsites.c")
    chain = [f"outer (callsites.c:{src['outer']})", f"middle (callsites.c:{src['middle']})",
             f"inner (callsites.c:{src['inner']})", "MPI_Allreduce"]
    node = next(r for r in gf.graph.roots if r.frame["name"] == "main")
    for name in chain:
        node = next(c for c in node.children if c.frame["name"] == name)
    calls = gf.dataframe.xs(node, level="node")["calls"]
    assert list(calls) == [4, 4]
    # every call of the run is under main once
    root_calls = gf.dataframe.xs(gf.graph.roots[0], level="node")["calls (inc)"]
    assert list(root_calls) == [sum(f["calls"][r] for f in job.profile["functions"].values()) for r in range(2)]


@pytest.mark.mpi
def test_compare_per_call_site(tmp_path):
    """`mpilens compare --sites`: each MPI function of the whole run also per call site, the sites
    named by file:line and function; the call counts per site follow the programs' loops."""
    runs = {}
    for side, iters in (("a", 3), ("b", 9)):
        runs[side] = [run_example("openmpi", "callsites", 2, tmp_path / f"{side}{i}", [str(iters)]).rundir
                      for i in range(2)]
    p = subprocess.run([str(MPILENS), "compare", *map(str, runs["a"]), "--vs", *map(str, runs["b"]), "--sites",
                        "--json", "--quiet"], capture_output=True, text=True, env=job_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    found = {}

    def walk(node: dict) -> None:
        if node["kind"] == "site":
            found[(node["path"][-2][1], node["name"])] = (node["calls_a"], node["calls_b"])
        for c in node.get("children", []):
            walk(c)
    for n in doc["whole"]:
        walk(n)
    src = markers(ROOT / "examples" / "c" / "callsites.c")
    lib = markers(ROOT / "examples" / "c" / "lib" / "sites.c")
    assert found[("MPI_Wait", f"callsites.c:{src['wait']} in main")] == (3, 9)
    assert found[("MPI_Allreduce", f"callsites.c:{src['inner']} in inner")] == (3, 9)
    assert found[("MPI_Sendrecv_replace", f"sites.c:{lib['lib']} in sites_lib_ring")] == (3, 9)


def source_line(path: Path, text: str, after: str | None = None) -> int:
    """Line number of the first line of a source that contains `text` (after the line with `after`)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
@pytest.mark.mpi
def test_trace_events_carry_their_call_site(mpi_name, tmp_path):
    """Trace mode: each call event carries its call site; the trace findings name the line of the
    waiting call, the Chrome/Perfetto slices show file:line in their args."""
    from mpilens.trace import findings, timeline

    src = ROOT / "examples" / "c" / "patterns.c"
    job = run_example(mpi_name, "patterns", 2, tmp_path / "a", ["late_sender", "30", "2"],
                      settings={"MPILENS_MODE": "profile,trace"})
    tl = timeline.load(job.rundir)
    late = [f for f in findings.find(tl) if f.kind == "late_sender" and f.evidence["tag"] != 99]
    assert late
    recv = source_line(src, "MPI_Recv(in, sizeof buf, MPI_BYTE, 1, r,", after='"late_sender"')
    for f in late:
        assert f.evidence["site"]["line"] == recv and Path(f.evidence["site"]["file"]).name == "patterns.c"
        assert f"patterns.c:{recv} (main)" in f.message
    # the slices of the Chrome/Perfetto export
    out = tmp_path / "trace.json"
    p = subprocess.run([str(MPILENS), "export", "chrome", str(job.rundir), "-o", str(out)], capture_output=True,
                       text=True, env=job_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    recvs = [e for e in events if e.get("ph") == "X" and e["name"] == "MPI_Recv" and e["pid"] == 0
             and e["args"].get("src") == 1 and e["ts"] > 0]
    assert recvs and all(e["args"]["site"] == f"patterns.c:{recv} (main)" for e in recvs), recvs[:3]

    # the last rank computes 300 ms before its barrier: far above what a busy machine adds to another
    # wait (at 30 ms, in a run beside the timing tests, a wait at the barrier between repetitions
    # was the longest)
    job = run_example(mpi_name, "patterns", 3, tmp_path / "b", ["late_barrier", "300", "2"],
                      settings={"MPILENS_MODE": "profile,trace"})
    tl = timeline.load(job.rundir)
    waits = [f for f in findings.find(tl) if f.kind == "collective_wait"]
    barrier = source_line(src, "MPI_Barrier(MPI_COMM_WORLD);", after='"late_barrier"')
    assert waits
    # the longest wait is the delayed rank's barrier; every wait is at one of the program's barriers
    assert max(waits, key=lambda f: f.duration_s).evidence["site"]["line"] == barrier
    barriers = {i for i, line in enumerate(src.read_text().splitlines(), 1) if "MPI_Barrier(" in line}
    assert {f.evidence["site"]["line"] for f in waits} <= barriers
