#!/usr/bin/env python3
"""The trace analysis at sizes no run here can make: `mpilens trace RUN` (out of core, rank by
rank: mpilens.trace.scan) on a synthetic halo exchange of --ranks ranks and --events events
(mpilens.trace.synthetic, written once into --dir and reused), with problems planted in it.

Each measurement runs the command as a user would, alternating the sizes (--sizes, in events),
--runs times each; the peak memory is that of the whole process tree (the command and its worker
processes, sampled every 50 ms: their resident set sizes summed), the time its wall-clock time.
The findings must name the planted problems (a late sender, a wait at the MPI_Allreduce, a gap),
and with --in-memory the out-of-core findings must equal the in-memory analysis' (at sizes that
fit: 80 bytes per event and more). The table gives the medians and how time and memory grow with
the events.

  python3 bench/trace_scale.py --ranks 64 --sizes 1e7,1e8 --runs 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from mpilens.trace import synthetic  # noqa: E402

MPILENS = ROOT / ".venv" / "bin" / "mpilens"


def planted(nranks: int, iterations: int) -> dict[tuple[int, int], int]:
    """A rank that computes 30 ms longer before an MPI_Allreduce a third of the way in, and one
    5 ms longer two thirds of the way."""
    a = (iterations // 3) // 10 * 10 + 9
    return {(nranks // 3, a): 30_000_000, (2 * nranks // 3, 2 * iterations // 3): 5_000_000}


def make(where: Path, nranks: int, events: int) -> tuple[Path, synthetic.Halo]:
    iterations = synthetic.iterations_for(events, nranks)
    h = synthetic.Halo(nranks, iterations, planted(nranks, iterations))
    d = where / f"halo-{nranks}x{iterations}"
    stamp = d / "synthetic.json"
    if not stamp.exists():
        shutil.rmtree(d, ignore_errors=True)
        t = time.monotonic()
        n = synthetic.write(d, h)
        stamp.write_text(json.dumps({"events": n, "write_s": time.monotonic() - t}))
    return d, h


def measure(cmd: list[str], output: str = "json") -> tuple[float, int, dict | str]:
    """Wall time, peak resident memory of the process tree, and the JSON the command printed
    (output="text": its text)."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, stop = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        me = psutil.Process(p.pid)
        while not stop.is_set():
            try:
                procs = [me] + me.children(recursive=True)
                rss = 0
                for q in procs:
                    try:
                        rss += q.memory_info().rss
                    except psutil.Error:
                        pass
                peak = max(peak, rss)
            except psutil.Error:
                pass
            stop.wait(0.05)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = p.communicate()
    wall = time.monotonic() - t
    stop.set()
    th.join()
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return wall, peak, json.loads(out) if output == "json" else out


def check(doc: dict, h: synthetic.Halo) -> None:
    """The planted problems are among the findings."""
    (r1, _), = [k for k, v in h.delays.items() if v == 30_000_000]
    late = {(f["sender"], f["receiver"]) for f in doc["findings"] if f["kind"] == "late_sender"}
    n = h.nranks
    assert (r1, (r1 - 1) % n) in late and (r1, (r1 + 1) % n) in late, late
    assert any(f["kind"] == "collective_wait" and abs(f["duration_s"] - 0.030) < 0.002 for f in doc["findings"])
    assert doc["messages"] == 2 * n * h.iterations, doc["messages"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--sizes", default="1e7,1e8", help="events, comma separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mpilens-trace-scale"))
    ap.add_argument("--engine", default="local")
    ap.add_argument("--workers", type=int)
    ap.add_argument("--in-memory", action="store_true", help="also the in-memory analysis, and the same findings")
    ap.add_argument("--report", action="store_true",
                    help="also `mpilens report RUN --html FILE` (the trace out of core past 200 MiB), and the page's size")
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    sizes = [int(float(x)) for x in a.sizes.split(",")]
    runs = {n: make(a.dir, a.ranks, n) for n in sizes}
    results: dict[tuple[int, str], list[tuple[float, int]]] = {}
    for _ in range(a.runs):
        for n in sizes:
            d, h = runs[n]
            cmd = [str(MPILENS), "trace", str(d), "--json", "--quiet", "--engine", a.engine]
            if a.workers:
                cmd += ["--workers", str(a.workers)]
            wall, peak, doc = measure(cmd)
            check(doc, h)
            results.setdefault((n, "out of core"), []).append((wall, peak))
            if a.report:
                # the HTML report, as a user makes it: it must name the planted late sender
                page = a.dir / f"report-{n:.0e}.html"
                wall3, peak3, text = measure([str(MPILENS), "report", str(d), "--html", str(page), "--quiet"],
                                             output="text")
                (r1, _), = [k for k, v in h.delays.items() if v == 30_000_000]
                html = page.read_text()
                assert "Late sender" in text and f"rank {r1} sent" in html, "the report misses the late sender"
                results.setdefault((n, f"HTML report ({page.stat().st_size / 2**20:.1f} MiB page)"),
                                   []).append((wall3, peak3))
            if a.in_memory:
                # a selection of every rank reads the trace into memory (mpilens trace's other path)
                wall2, peak2, doc2 = measure([str(MPILENS), "trace", str(d), "--json", "--quiet",
                                              "--ranks", f"0-{a.ranks - 1}"])
                assert doc2["findings"] == doc["findings"], "in memory and out of core differ"
                results.setdefault((n, "in memory"), []).append((wall2, peak2))
    print(f"| events | ranks | trace bytes | analysis | engine | time (median of {a.runs}) | peak memory (median) |")
    print("|---|---|---|---|---|---|---|")
    for (n, how), rows in sorted(results.items()):
        d, h = runs[n]
        size = sum(f.stat().st_size for f in (d / "trace").iterdir())
        t = statistics.median(r[0] for r in rows)
        m = statistics.median(r[1] for r in rows)
        print(f"| {n:.0e} | {a.ranks} | {size / 2**30:.2f} GiB | {how} | {a.engine} | {t:.1f} s | {m / 2**30:.2f} GiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
