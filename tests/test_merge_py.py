"""The Python merge (python/mpilens/merge.py) is mpilens-merge (runtime/src/tools/merge_main.c and merge.c,
the merge rank 0 runs at MPI_Finalize): for every input, the same document (json.loads of the
program's output: the same keys in the same order, the same values, ints and floats alike, floats
bit for bit) and the same problems (its stderr lines, in order).

The oracle is build/bin/mpilens-merge, run here as a subprocess; without it there is nothing to
compare with and the tests are skipped. The inputs: every payload the committed run directories hold
(tests/data: the partial files of partial-abort and of the aborted runs, and the ranks recovered
from aborted-mpich's statistics files; no committed run holds an MPI_Pcontrol snapshot, and the
complete runs keep no payload, rank 0 merged them in memory), with each option combination
`mpilens report` passes; damaged copies of them (cut at many lengths, a byte flipped at many
offsets, several in one file, foreign bytes after them); files that are not payloads (empty, FIFO,
link, directory, device, missing); and payloads generated here by an encoder of this test's own
(regions, user counters, message sizes, call sites, names of any bytes, version 2, extreme values).
Last, payload.merge, which `mpilens report` calls, against what it was when it ran the program.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import os
import random
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import BUILD, ROOT
from mpilens import _layout as L
from mpilens import layout, merge, payload, recover
from mpilens.errors import RunDirectoryError

MERGE = BUILD / "bin" / "mpilens-merge"
DATA = ROOT / "tests" / "data"
pytestmark = pytest.mark.skipif(not MERGE.is_file(), reason=f"{MERGE} is not built: no merge to compare the "
                                "Python merge with (`make` builds it)")

# (nranks, time_sample, intervals, version, mpi): what rundir passes (meta.json's nranks or none,
# MPILENS_TIME_SAMPLE, MPILENS_INTERVALS, the tool's version, the MPI flavour); nranks also fewer
# and more ranks than the payloads say
OPTIONS = list(itertools.product([None, 2, 3, 5], [1, 4], [False, True], [None, "0.9.1"], [None, "openmpi"]))
SIMPLE = (None, 1, False, None, None)


# ------------------------------------------------------------------------------------ the two merges
def run_program(files: list[Path], opts: tuple = SIMPLE) -> tuple[Any, str]:
    """mpilens-merge's document (None: exit status 2, "invalid": output json.loads refuses, "usage":
    an option value it refuses) and stderr."""
    nranks, time_sample, intervals, version, mpi = opts
    cmd = [str(MERGE)]
    if nranks:
        cmd += ["--nranks", str(nranks)]
    if time_sample > 1:
        cmd += ["--time-sample", str(time_sample)]
    if intervals:
        cmd.append("--intervals")
    if version is not None:
        cmd += ["--version", version]
    if mpi is not None:
        cmd += ["--mpi", mpi]
    p = subprocess.run(cmd + ["--"] + [str(f) for f in files], capture_output=True, timeout=60)
    assert p.returncode in (0, 1, 2), p.stderr
    err = p.stderr.decode("utf-8", "backslashreplace")
    if p.returncode == 1:
        assert "usage: mpilens-merge" in err
        return "usage", None
    if p.returncode == 2:
        assert p.stdout == b""
        return None, err
    try:
        return json.loads(p.stdout.decode()), err
    except json.JSONDecodeError:
        return "invalid", err


def run_python(files: list[Path], opts: tuple = SIMPLE) -> tuple[Any, str]:
    """merge.merge_payloads, in the program's terms: its document and its stderr."""
    try:
        doc, problems = merge.merge_payloads(files, *opts)
    except RunDirectoryError as err:
        assert "no valid JSON" in str(err)
        return "invalid", None
    except ValueError as err:
        assert "not a positive integer" in str(err)
        return "usage", None
    return doc, "".join(f"{why}\n" if f is None else f"{f}: {why}\n" for f, why in problems)


def same(files: list[Path], opts: tuple = SIMPLE, program: concurrent.futures.Future | None = None) -> None:
    doc, err = run_python(files, opts)
    want_doc, want_err = program.result() if program else run_program(files, opts)
    where = f"{[str(f) for f in files]} with {opts}"
    if want_doc in ("invalid", "usage"):
        assert doc == want_doc, where
        return
    assert err == want_err, where
    # json.dumps tells apart what == does not: 1 and 1.0, 0.0 and -0.0, the order of keys
    if json.dumps(doc) != json.dumps(want_doc):
        assert doc == want_doc, where
        assert json.dumps(doc) == json.dumps(want_doc), where


def same_all(cases: list[tuple[list[Path], tuple]]) -> None:
    """same() for many cases, the program's runs in parallel with the Python merges."""
    with concurrent.futures.ThreadPoolExecutor(max(2, os.cpu_count() or 1)) as pool:
        runs = [pool.submit(run_program, *c) for c in cases]
        try:
            for (files, opts), program in zip(cases, runs):
                same(files, opts, program)
        finally:
            for r in runs:
                r.cancel()


# ------------------------------------------------------------------------------------ the committed payloads
@pytest.fixture(scope="module")
def fixture_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """The payload files of each committed run directory that has some; aborted-mpich's ranks 0
    and 2 left statistics files only: recovered here, written out as the program reads files."""
    tmp_path = tmp_path_factory.mktemp("recovered")
    sets = {name: sorted((DATA / name / "ranks").glob("rank-*.partial")) for name in ("partial-abort", "partial-regions")}
    for run in sorted(p for p in (DATA / "runs").glob("aborted-*") if p.is_dir()):
        files = [Path(f) for f in layout.partial_files(run)]
        have = {layout.rank_of("partial", f) for f in files}
        problems: list[str] = []
        for r in recover.recover(run, have, problems):
            out = tmp_path / run.name / f"recovered-{r.rank:06d}.payload"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(r.read_bytes())
            files.append(out)
        assert not problems, problems
        sets[run.name] = files
    snapshots = sorted(DATA.glob("**/pcontrol/*/rank-*.bin"))
    for folder in sorted({f.parent for f in snapshots}):
        sets[str(folder.relative_to(DATA))] = sorted(folder.glob("rank-*.bin"))
    assert all(sets.values()) and len(sets) >= 3, sets
    return sets


def test_committed_payloads_with_every_option(fixture_sets):
    sets = fixture_sets
    cases = [(files, opts) for files in sets.values() for opts in OPTIONS]
    # each file alone, and the files in another order (a rank's place in the list does not matter)
    cases += [([f], opts) for files in sets.values() for f in files for opts in (SIMPLE, (3, 4, True, "1", "x"))]
    cases += [(files[::-1], SIMPLE) for files in sets.values()]
    same_all(cases)


def boundaries(data: bytes) -> list[int]:
    """Where each record, string and table count of a payload starts (and its end), walking the
    spec's order of a payload (PAYLOAD_LAYOUT; version 2 has no call sites, versions 2 and 3 a head
    without its last field)."""
    at, out = 0, []
    v2 = data.startswith(L.MAGIC_PAYLOAD_V2)
    older = v2 or data.startswith(L.MAGIC_PAYLOAD_V3)

    def string() -> None:
        nonlocal at
        out.extend((at, at + 2))
        at += 2 + struct.unpack_from("<H", data, at)[0]

    for kind, name, rec, named in L.PAYLOAD_LAYOUT:
        if v2 and name in ("payload_callsites", "modules", "sites", "frames"):
            continue
        out.append(at)
        if kind == "record":
            at += OLDER_HEAD.size if older and name == "payload_head" else rec.size
        elif kind == "string":
            string()
        else:
            n = struct.unpack_from("<I", data, at)[0]
            at += 4
            for _ in range(n):
                out.append(at)
                at += rec.size
                if named:
                    string()
    assert at == len(data)
    return sorted(set(out + [at]))


def test_damaged_copies_of_the_committed_payloads(fixture_sets, tmp_path):
    """Each payload cut at every 50th of its length and around every boundary, a byte flipped at
    each offset of the head (its lowest bit, its highest), at the boundaries and every 60th of the
    rest (one of them); merged with the other ranks' files, with the options taken in turn."""
    cases, k = [], 0
    for name, files in fixture_sets.items():
        for i, f in enumerate(files):
            data = f.read_bytes()
            bounds = boundaries(data)
            others = files[:i] + files[i + 1:]
            cuts = {len(data) * j // 50 for j in range(50)} | {b + d for b in bounds for d in (-1, 0, 1)}
            flips = set(range(L.PAYLOAD_HEAD.size)) | set(bounds)
            flips |= set(range(0, len(data), max(1, len(data) // 60)))
            nranks_field = L.PAYLOAD_HEAD_DTYPE.fields["nranks"][1]
            for cut in sorted(c for c in cuts if 0 <= c < len(data)):
                out = tmp_path / "cut" / name / f"{f.name}.{cut}"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data[:cut])
                cases.append((others + [out], OPTIONS[k % len(OPTIONS)]))
                k += 1
            for at in sorted(a for a in flips if 0 <= a < len(data)):
                for bit in (0x01, 0x80) if at < L.PAYLOAD_HEAD.size else (0x01 if at % 2 else 0x80,):
                    d = bytearray(data)
                    d[at] ^= bit
                    out = tmp_path / "flip" / name / f"{f.name}.{at}.{bit}"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(bytes(d))
                    opts = OPTIONS[k % len(OPTIONS)]
                    if nranks_field + 2 <= at < nranks_field + 4 and not opts[0]:
                        # a job of 2**16 and more ranks: both would write its nulls (hundreds of MB)
                        opts = (3, *opts[1:])
                    cases.append(([out, *others], opts))
                    k += 1
    assert len(cases) > 1000
    same_all(cases)


def test_files_of_several_payloads_and_foreign_bytes(fixture_sets, tmp_path):
    sets = fixture_sets
    files = sets["partial-abort"]
    data = [f.read_bytes() for f in files]
    other = sets["aborted-openmpi"][0].read_bytes()
    v1 = b"MLPAYLD1" + data[2][8:]

    def file(name: str, content: bytes) -> Path:
        p = tmp_path / name
        p.write_bytes(content)
        return p

    cases = [
        [file("all", b"".join(data))],
        [file("two", data[0] + data[1]), files[2]],
        [file("twice", data[1] + data[1]), *files],  # a rank twice: its last payload is merged
        [*files, file("again", other)],  # rank 0 of another run after rank 0 of this one
        [file("again", other), *files],
        [file("tail", data[0] + b"\0" * 7), *files[1:]],
        [file("garbage", data[0] + b"not a payload")],
        [file("cutmagic", data[0] + data[1][:3])],
        [file("cutmagic2", data[0] + data[1][:6])],
        [file("cuthead", data[0] + data[1][:50])],
        [file("cutbody", data[0] + data[1][:-1])],
        [file("version", data[0] + v1)],
        [file("v1", v1), files[0]],
        [file("v9", b"MLPAYLD9" + data[1][8:])],
        [file("vnul", b"MLPA\0YLD" + data[1][8:])],
        [file("vutf", b"MLPA\xc3\xa9\xff\n" + data[1][8:])],
        [file("short", b"ML")],
        [file("nomagic", b"XLPAYLD3" + data[1][8:])],
        [file("zero", b"\0" * 200)],
        [file("bigtotal", data[0][:8] + struct.pack("<Q", 1 << 63) + data[0][16:])],
        [file("smalltotal", data[0][:8] + struct.pack("<Q", 127) + data[0][16:])],
        [file("noend", data[0][:-8] + b"MLEND\0\0\1")],
        [file("longer", data[0][:8] + struct.pack("<Q", len(data[0]) + 4) + data[0][16:] + b"\0" * 4)],
    ]
    same_all([(c, opts) for c in cases for opts in (SIMPLE, (5, 4, True, "1", "mpich"))])


def test_files_that_are_not_payloads(fixture_sets, tmp_path):
    files = fixture_sets["partial-abort"]
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(files[0])
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    folder = tmp_path / "folder"
    folder.mkdir()
    missing = tmp_path / "missing"
    # a payload whose head says no rank (nranks 0): without --nranks there is no job to write,
    # and the program's complaint names the errno of its last failed read
    d = bytearray(files[0].read_bytes())
    d[20:24] = bytes(4)
    nobody = tmp_path / "nobody"
    nobody.write_bytes(bytes(d))
    d[20:24] = struct.pack("<I", 1 << 31)
    negative = tmp_path / "negative"
    negative.write_bytes(bytes(d))
    cases = [[empty], [fifo], [link], [dangling], [folder], [missing], [Path("/dev/null")],
             [empty, fifo, link, folder, missing], [fifo, *files], [*files, link, empty], [empty, files[1]],
             [nobody], [missing, nobody], [nobody, fifo], [negative], [negative, files[1]], [nobody, link, empty]]
    same_all([(c, opts) for c in cases for opts in (SIMPLE, (2, 4, True, None, None))])


# ------------------------------------------------------------------------------------ generated payloads
def _string(b: bytes) -> bytes:
    return struct.pack("<H", len(b)) + b


def _table(s: struct.Struct, records: list[tuple], named: bool = False) -> bytes:
    out = [struct.pack("<I", len(records))]
    for r in records:
        out.append(s.pack(*r[:-1]) + _string(r[-1]) if named else s.pack(*r))
    return b"".join(out)


# the head of versions 2 and 3: without recv_unknown, the spec's last field of the head
OLDER_FIELDS = L.PAYLOAD_HEAD_FIELDS[:-1]
OLDER_HEAD = struct.Struct(L.PAYLOAD_HEAD.format[:-1])
assert L.PAYLOAD_HEAD_FIELDS[-1] == "recv_unknown" and OLDER_HEAD.size == L.PAYLOAD_HEAD.size - 8


def encode(head: dict[str, Any], host: bytes, tables: dict[str, list[tuple]], depth: int = 0,
           intervals: tuple[int, int] = (0, 0), version: int = 4) -> bytes:
    """A payload in this test's own encoding of the spec's order (docs/run-directory.md), of version
    4 (today's), 3 (no recv_unknown in the head) or 2 (nor call sites)."""
    v2 = version == 2
    body = [_string(host), _table(L.PAYLOAD_REGION, tables["regions"], True),
            _table(L.PAYLOAD_FUNCTION, tables["functions"], True), _table(L.PAYLOAD_STAT, tables["stats"]),
            _table(L.PAYLOAD_SIZE, tables["sizes"]), _table(L.PAYLOAD_PEER, tables["matrix"]),
            _table(L.PAYLOAD_COUNTER_NAME, tables["counter_names"], True),
            _table(L.PAYLOAD_COUNTER, tables["counters"])]
    if not v2:
        body += [L.PAYLOAD_CALLSITES.pack(depth), _table(L.PAYLOAD_MODULE, tables["modules"], True),
                 _table(L.PAYLOAD_SITE, tables["sites"]), _table(L.PAYLOAD_FRAME, tables["frames"])]
    body.append(L.PAYLOAD_TAIL.pack(*intervals, L.MAGIC_PAYLOAD_END))
    data = b"".join(body)
    magic = {2: L.MAGIC_PAYLOAD_V2, 3: L.MAGIC_PAYLOAD_V3, 4: L.MAGIC_PAYLOAD}[version]
    struct_, names = (L.PAYLOAD_HEAD, L.PAYLOAD_HEAD_FIELDS) if version == 4 else (OLDER_HEAD, OLDER_FIELDS)
    fields = dict(head, magic=magic, total_length=struct_.size + len(data))
    return struct_.pack(*(fields[f] for f in names)) + data


# names of any bytes: UTF-8 of 1 to 4 bytes, bytes that are not UTF-8 (a lone continuation, an
# overlong form, a surrogate, beyond U+10FFFF, cut short), control characters, JSON's specials,
# a zero byte (json.c stops there: two names equal up to it are one key)
ODD_NAMES = [b"MPI_Send", b"MPI_Recv", b"caf\xc3\xa9", b"\xf0\x9d\x84\x9e clef", b"\xe2\x82\xac", b"\x80", b"\xc0\x80",
             b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xe2\x82A", b"\xff\xfe", b"tab\there", b"nl\nx",
             b'quote" back\\ slash/', b"\x01\x1f\x7f", b"nul\0one", b"nul\0two", b"nul", b"", b"\xf0\x9f\x98", b"\xc3",
             b"a\xc3(b", b"\xef\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xe0\x9f\x80", b"\xe0\xa0\x80", b"\xf0\x8f\xbf\xbf"]


def _u64(rng: random.Random) -> int:
    return rng.choice([0, 1, 7, 10**9, 3 * 10**9, 1234567891, 1 << 53, (1 << 53) + 1, (1 << 63) + 12345,
                       (1 << 64) - 1, rng.randrange(1 << 64), rng.randrange(10**12), rng.randrange(1 << 20)])


def _i64(rng: random.Random) -> int:
    return rng.choice([0, 1, -1, -(1 << 63), (1 << 63) - 1, rng.randrange(-(1 << 40), 1 << 40), rng.randrange(1 << 16)])


def _double(rng: random.Random) -> float:
    return rng.choice([0.0, -0.0, 1.0, -2.5, 0.1, 1e16, 1e17, 123456789012345678.0, 1e-300, 5e-324, 1e300,
                       float("nan"), rng.uniform(-1e6, 1e6), float(rng.randrange(1000)), rng.random()])


def generated(rng: random.Random, rank: int, nranks: int, names: list[bytes], version: int = 4) -> bytes:
    """One rank's payload of random tables that name things from `names` (shared among the ranks,
    so that they match), with ids and paths that are sometimes unknown, out of range or repeated."""
    pick = lambda: rng.choice(names)  # noqa: E731
    nregions = rng.randrange(0, 6)
    regions = []
    for path in rng.sample(range(1, 9), nregions):
        parent = rng.choice([0, 0, rng.randrange(0, 9), 40])
        regions.append((path, parent, _u64(rng), _u64(rng), pick()))
    ids = rng.sample(range(65536), 8) + [0, 65535]
    functions = [(fid, rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 255]), pick()) for fid in rng.sample(ids, rng.randrange(0, 8))]
    if functions and rng.random() < 0.3:
        functions.append((functions[0][0], 1, pick()))  # an id twice: the second name wins
    paths = [0, 0, 1, 2, 3, 5, 8, 9, 1 << 31]
    stats = [(rng.choice(paths), rng.choice(ids), rng.choice([0, 0, 1, 3, 1000, _u64(rng)]), _u64(rng), _u64(rng),
              _u64(rng), _u64(rng), rng.choice([0, 0, 7, 10**6, _u64(rng)]), _i64(rng), _i64(rng))
             for _ in range(rng.randrange(0, 30))]
    sizes = [(rng.choice(ids), rng.choice([0, 1, 9, 20, 63, 64, 65, 200]), rng.choice([0, 1, _u64(rng)]), _u64(rng))
             for _ in range(rng.randrange(0, 12))]
    matrix = [(rng.choice([0, 1, rank, nranks + 3, (1 << 32) - 1]), _u64(rng), _i64(rng)) for _ in range(rng.randrange(0, 5))]
    cids = [0, 1, 2, 1023, 1024, 65535]
    counter_names = [(cid, rng.choice([0, 1, 2]), pick()) for cid in rng.sample(cids, rng.randrange(0, 5))]
    counters = [(rng.choice(paths), rng.choice(cids), _double(rng), _u64(rng), rng.choice([0, 5, 5, 9, _u64(rng)]))
                for _ in range(rng.randrange(0, 12))]
    nmod = rng.randrange(0, 4)
    modules = [(rng.choice([i, i, rng.randrange(0, 5)]), _u64(rng), pick()) for i in range(nmod)]
    sites, frames = [], []
    for s in range(rng.randrange(0, 10)):
        sid = rng.choice([s, s, s, rng.randrange(0, 12)])
        sites.append((sid, rng.choice(ids), rng.randrange(0, 70), _u64(rng), rng.choice([0, 10, _u64(rng)]), _i64(rng),
                      _i64(rng)))
        for level in range(rng.choice([0, 1, 2, 3, 70])):
            frames.append((rng.choice([sid, sid, sid, sid + 1]), level, rng.choice([0, 1, 2, 5, (1 << 32) - 1]),
                           rng.choice([0x1000, 0x1008, 0x2000 + level, _u64(rng)])))
    head = dict(rank=rank, nranks=nranks, complete=rng.choice([0, 1, 1, 2]), reason=rng.choice([0, 1, 2, 3, 4, 5, 6, 99]),
                signo=rng.choice([0, 0, 9, 15]), nthreads=rng.choice([1, 4, (1 << 32) - 1]), wall_ns=_u64(rng),
                mpi_ns=_u64(rng), mpi_se_ns=_u64(rng), init_ns=_u64(rng), dropped_requests=_u64(rng),
                dropped_regions=rng.choice([0, 3]), region_mismatch=_u64(rng), requests_outstanding=rng.randrange(5),
                recv_unknown=rng.choice([0, 0, 6, _u64(rng)]))
    tables = dict(regions=regions, functions=functions, stats=stats, sizes=sizes, matrix=matrix,
                  counter_names=counter_names, counters=counters, modules=modules, sites=sites, frames=frames)
    return encode(head, pick(), tables, rng.choice([0, 2, 2, 8]), (_u64(rng), rng.randrange(9)), version)


def test_generated_payloads(tmp_path):
    cases = []
    for seed in range(120):
        rng = random.Random(seed)
        nranks = rng.randrange(1, 6)
        names = rng.sample(ODD_NAMES, rng.randrange(3, 12)) + [b"MPI_Allreduce", b"MPI_Bcast"]
        if seed % 4 == 0:  # names of random bytes
            names = [rng.randbytes(rng.randrange(1, 12)) for _ in range(10)]
        ranks = rng.sample(range(nranks + 1), rng.randrange(1, nranks + 2))  # some missing, one beyond the job
        files = []
        for i, r in enumerate(ranks + ([ranks[0]] if seed % 5 == 0 else [])):  # seed % 5: a rank twice
            p = tmp_path / f"{seed}-{i}.payload"
            p.write_bytes(generated(rng, r, nranks, names, version=rng.choice([2, 3, 4, 4, 4, 4, 4])))
            files.append(p)
        if seed % 3 == 0:  # several payloads in one file
            together = tmp_path / f"{seed}-all.payload"
            together.write_bytes(b"".join(f.read_bytes() for f in files))
            files = [together]
        cases.append((files, OPTIONS[(seed * 7) % len(OPTIONS)]))
        cases.append((files, (None, 5, True, None, None)))
    same_all(cases)


def test_many_ranks(tmp_path):
    """Hundreds of ranks, most of a job of thousands missing: the sums over ranks and the nulls."""
    rng = random.Random(7)
    names = [b"MPI_Send", b"MPI_Recv", b"MPI_Allreduce", b"MPI_Wait", b"solve", b"halo", b"/lib/libmpi.so", b"n"]
    files = []
    for r in rng.sample(range(400), 300):
        files.append(tmp_path / f"{r}.payload")
        files[-1].write_bytes(generated(rng, r, 400, names))
    together = tmp_path / "all"
    together.write_bytes(b"".join(f.read_bytes() for f in files))
    same_all([(files, (None, 4, True, None, None)), ([together], (3000, 1, False, "1", None))])


def test_generated_extremes(tmp_path):
    """Values whose sums wrap around 2**64, standard errors beyond 2**64 ns (sqrt of a huge
    variance), user counters that add up to infinity (merge.c prints "inf": no valid JSON), a
    call site of more than 64 frames, regions nested deeper than merge.c's indentation goes."""
    top = (1 << 64) - 1
    empty = dict(regions=[], functions=[(5, 0, b"MPI_Send")], stats=[], sizes=[], matrix=[], counter_names=[],
                 counters=[], modules=[], sites=[], frames=[])
    head = dict(rank=0, nranks=2, complete=1, reason=0, signo=0, nthreads=1, wall_ns=top, mpi_ns=top, mpi_se_ns=top,
                init_ns=top, dropped_requests=top, dropped_regions=top, region_mismatch=top, requests_outstanding=top,
                recv_unknown=top)

    def write(name: str, *payloads: bytes) -> Path:
        p = tmp_path / name
        p.write_bytes(b"".join(payloads))
        return p

    wrap = dict(empty, stats=[(0, 5, top, top, top, top, top, top, -1, -1)] * 3 + [(0, 5, 2, 1, 1, 1, 1, 1, 1, 1)],
                sizes=[(5, 64, top, top)] * 2, matrix=[(1, top, -1)])
    se = dict(empty, stats=[(0, 5, 1, 1, 1, 1, 1, top, 0, 0)] * 5 + [(0, 5, 1, 1, 1, 1, 1, (1 << 63) + 2**40, 0, 0)])
    se2 = dict(empty, stats=[(0, 5, 1, 1, 1, 1, 1, (1 << 63) + 2**40, 0, 0)])
    inf = dict(empty, counter_names=[(0, 0, b"big")], counters=[(0, 0, 1.7e308, 1, 1)] * 2)
    ninf = dict(empty, counter_names=[(0, 1, b"neg")], counters=[(0, 0, float("-inf"), 1, 1)])
    nan = dict(empty, counter_names=[(0, 0, b"n"), (1, 1, b"l")],
               counters=[(0, 0, float("nan"), 1, 1), (0, 0, 2.0, 1, 1), (0, 1, 1.0, 1, 5), (0, 1, float("nan"), 1, 5),
                         (0, 1, 3.0, 1, 4), (0, 1, 4.0, 1, 0)])
    frames = [(0, i, 0, 0x1000 + i) for i in range(100)]
    long_site = dict(empty, modules=[(0, 0, b"/lib/a.so")], sites=[(0, 5, 100, 1, 2, 3, 4), (1, 5, 64, 1, 2, 3, 4)],
                     frames=frames + [(1, i, 0, 0x1000 + i) for i in range(64)])
    deep = dict(empty, regions=[(p, p - 1, 1, 10**9, b"r%d" % p) for p in range(1, 90)],
                stats=[(89, 5, 1, 1, 1, 1, 1, 1, 1, 1)], counter_names=[(0, 0, b"c")], counters=[(89, 0, 1.5, 1, 1)])
    cases = []
    for name, tables in dict(wrap=wrap, se=se, se2=se2, inf=inf, ninf=ninf, nan=nan, long_site=long_site,
                             deep=deep).items():
        files = [write(f"{name}-0", encode(head, b"h", tables, 2), encode(dict(head, rank=1), b"h", tables, 2))]
        cases += [(files, opts) for opts in (SIMPLE, (None, 4, True, None, None))]
    same_all(cases)


def test_options_as_the_program_reads_them():
    """merge.c writes --version and --mpi unescaped: what they say is read as JSON string contents;
    --nranks is an int and --time-sample a long, as strtol reads them."""
    files = sorted((DATA / "partial-abort" / "ranks").glob("rank-*.partial"))
    cases = [(files, (None, 1, False, v, m)) for v, m in
             [("", ""), ("1.0-\u00e9", "open mpi"), ("a\\u0041", None), ("tab\\t", "x"), ('q"', None), ("back\\", None),
              ('1", "injected": "2', None), ("x\x01", None)]]
    cases += [(files, (n, t, False, None, None)) for n, t in
              [((1 << 32) + 3, 2), (1 << 31, 1), (3, 1 << 40), (1 << 70, 1), (2, 1 << 70)]]
    same_all(cases)


# ------------------------------------------------------------------------------------ payload.merge
def merged_by_the_program(files: list, root: Path, nranks: int | None = None, time_sample: int = 1,
                          intervals: bool = False, version: str | None = None,
                          mpi: str | None = None) -> tuple[dict | None, list[str]]:
    """payload.merge as it was when it ran mpilens-merge (regular files only; the problems named
    relative to root): the contract the Python merge keeps."""
    kept, refused = [], []
    for f in files:
        try:
            os.close(layout.open_regular(f))
            kept.append(f)
        except (RunDirectoryError, OSError) as err:
            refused.append(str(err) if isinstance(err, RunDirectoryError) else f"{f.name}: cannot read ({err.strerror})")
    if not kept:
        return None, refused
    doc, err = run_program(kept, (nranks, time_sample, intervals, version, mpi))
    problems = refused
    for line in err.splitlines():
        f = next((f for f in kept if line.startswith(f"{f}: ")), None)
        if f is None:
            problems.append(line)
            continue
        name, why = f.relative_to(root) if f.is_relative_to(root) else f, line[len(str(f)) + 2:]
        problems.append(f"{name}: {why}" if why.startswith("cannot read") else f"{name} is damaged: {why}")
    return doc, problems


def test_payload_merge_keeps_its_contract(tmp_path):
    root = tmp_path / "run"
    (root / "ranks").mkdir(parents=True)
    files = sorted((DATA / "partial-abort" / "ranks").glob("rank-*.partial"))
    mine = []
    for f in files:
        (root / "ranks" / f.name).write_bytes(f.read_bytes())
        mine.append(root / "ranks" / f.name)
    cut = root / "ranks" / "rank-000003.partial"
    cut.write_bytes(files[0].read_bytes()[:300])
    fifo = root / "ranks" / "rank-000004.partial"
    os.mkfifo(fifo)
    link = root / "ranks" / "rank-000005.partial"
    link.symlink_to(mine[0])
    missing = root / "ranks" / "rank-000006.partial"
    outside = tmp_path / "elsewhere.partial"
    outside.write_bytes(files[1].read_bytes()[:-3])
    for case in ([*mine], [cut, *mine], [fifo, link, missing, *mine, outside], [fifo, link], [cut], [missing, cut, mine[1]]):
        for opts in (SIMPLE, (3, 4, True, "0.9", "openmpi")):
            want = merged_by_the_program(case, root, *opts)
            assert payload.merge(case, root, *opts) == want, (case, opts)
    assert payload.merge([], root) == (None, [])


def test_payload_merge_of_recovered_ranks_and_container_members(tmp_path):
    """Ranks recovered from their statistics files and ranks' files in a container are merged from
    their bytes and named as before: the statistics file, the container and the rank."""
    run = DATA / "runs" / "aborted-mpich"
    partial = [Path(f) for f in layout.partial_files(run)]
    rec = recover.recover(run, {layout.rank_of("partial", f) for f in partial}, [])
    assert rec
    copies = []
    for r in rec:
        copies.append(tmp_path / f"{r.rank}.payload")
        copies[-1].write_bytes(r.read_bytes())
    doc, problems = payload.merge([*partial, *rec], run, nranks=3)
    want, want_problems = merged_by_the_program([*partial, *copies], run, nranks=3)
    assert doc == want and problems == want_problems == []
    # a recovered rank that is damaged is named by its statistics file
    bad = recover.Recovered(rec[0].name, rec[0].rank, rec[0].data[:-1])
    doc, problems = payload.merge([*partial, bad], run)
    assert problems == [f"{rec[0].name} is damaged: truncated: {len(bad.data)} of {len(rec[0].data)} bytes"]
    assert doc is not None and doc["ranks"][rec[0].rank]["host"] is None

    # a container of ranks/ (MPILENS_FILES=host): rank 0's payload whole, rank 1's cut short
    folder = tmp_path / "host" / "ranks"
    folder.mkdir(parents=True)
    container = folder / L.CONTAINER_DATA_PATH.format(group=0)
    payloads = [f.read_bytes() for f in sorted((DATA / "partial-abort" / "ranks").glob("rank-*.partial"))]
    chunks, blob = [], b""
    for rank, data in enumerate([payloads[0], payloads[1][:200]]):
        chunks.append((len(blob), len(data)))
        blob += L.CONTAINER_CHUNK.pack(L.MAGIC_CONTAINER, rank, L.FILES["partial"].stream, 0, len(data), 0, 0) + data
    container.write_bytes(blob)
    members = [layout.Member("partial", r, 0, container, [c]) for r, c in enumerate(chunks)]
    doc, problems = payload.merge(members, tmp_path / "host", nranks=3)
    assert problems == [f"{members[1].name} is damaged: truncated: 200 of {len(payloads[1])} bytes"]
    assert doc == merge.merge_payloads([Path(f) for f in sorted((DATA / "partial-abort" / "ranks").glob("*"))[:1]],
                                       nranks=3)[0]
    # a member whose chunk is not what the index says: that error alone, as before
    broken = layout.Member("partial", 2, 0, container, [(chunks[1][0], chunks[1][1] + 5)])
    doc, problems = payload.merge([members[0], broken], tmp_path / "host")
    assert doc is None and len(problems) == 1 and "damaged container" in problems[0]
    # a container outside the run directory is named in full
    doc, problems = payload.merge(members, tmp_path / "elsewhere", nranks=3)
    assert problems == [f"{members[1]} is damaged: truncated: 200 of {len(payloads[1])} bytes"]
