"""Where each file of a run directory lives: the one module of mpilens that knows the run
directory's path patterns. Every reader asks it for paths (``layout.trace_files(run_dir)``,
``layout.memory_file(run_dir, rank)``, ...) instead of joining folder and file names itself.

The patterns are data, one table (``PATTERNS``: family -> path pattern relative to the run
directory) taken from the run directory's spec (runtime/spec/rundir.yaml, through the generated
``mpilens._layout``). A pattern is a ``str.format`` template whose fields are
``{rank:06d}`` (world rank) and ``{snapshot:04d}`` (number of an MPI_Pcontrol(3|4) snapshot);
globs and parsers are derived from it.

With MPILENS_FILES=host the ranks of a host write the files of a family as chunks into a container
in the family's folder (group-NNNNNN.mlc, indexed by group-NNNNNN.mlx; docs/run-directory.md,
"Files per host"). ``files()`` and the functions built on it return such a rank's file as a
``Member``, which reads like a ``Path`` (``read_bytes``, ``read_text``, ``open``, ``name``), so a
reader never knows which layout it reads.
"""

from __future__ import annotations

import errno
import functools
import io
import json
import os
import re
import stat
import string
from pathlib import Path
from typing import Any

from . import _layout
from .errors import RunDirectoryError

# family -> path pattern, relative to the run directory: the `files` of runtime/spec/rundir.yaml
# (generated into mpilens._layout; docs/run-directory.md says what each holds)
PATTERNS: dict[str, str] = {name: f.path for name, f in _layout.FILES.items()}

# mode (what `Run.modes` names) -> the family whose presence shows it
MODES: dict[str, str] = {"profile": "profile", "intervals": "intervals", "partial": "partial", "snapshots": "snapshot",
                         "io": "io"}
for _name, _file in _layout.FILES.items():  # each mode of --mode: the first of its files in the spec
    if _file.mode:
        MODES.setdefault(_file.mode, _name)

_FIELD = re.compile(r"\{(\w+)(?::[^}]*)?\}")


def pattern(family: str) -> str:
    """The path pattern of a family (relative to the run directory); KeyError for an unknown one."""
    return PATTERNS[family]


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def _fill(template: str, wild: str, values: dict[str, int]) -> str:
    """The template with the given fields formatted and the others replaced by `wild`."""
    out = []
    for literal, name, spec, _ in string.Formatter().parse(template):
        out.append(literal)
        if name:
            out.append(format(values[name], spec) if name in values else wild)
    return "".join(out)


def glob_pattern(family: str, **fields: int) -> str:
    """The family's files as a glob relative to the run directory, e.g. "trace/rank-*.bin"
    (fields given are fixed: ``glob_pattern("snapshot", snapshot=2)``)."""
    return _fill(PATTERNS[family], "*", fields)


def describe(family: str) -> str:
    """How messages name a family's files: its glob, e.g. "memory/rank-*.bin"."""
    return glob_pattern(family)


def relative(family: str, **fields: int) -> str:
    """One file of a family relative to the run directory, e.g. "counters/rank-000003.bin"."""
    return PATTERNS[family].format(**fields)


def path(run_dir: str | Path, family: str, **fields: int) -> Path:
    """One file of a family: ``path(run_dir, "memory", rank=3)``."""
    return Path(run_dir) / relative(family, **fields)


def folder(run_dir: str | Path, family: str, **fields: int) -> Path:
    """The directory that holds a family's files (the run directory itself for meta.json)."""
    parent = PATTERNS[family].rpartition("/")[0]
    return Path(run_dir) / _fill(parent, "*", fields) if parent else Path(run_dir)


def files(run_dir: str | Path, family: str, **fields: int) -> list[RankFile]:
    """The family's files present in a run directory, by rank (fields given are fixed): the
    per-rank files and the ranks' files in the containers of the family's folder."""
    rx = _regex(family)
    own = sorted(p for p in Path(run_dir).glob(glob_pattern(family, **fields))
                 if rx.fullmatch(p.relative_to(run_dir).as_posix()))
    inside = members(run_dir, family, **fields)
    if not inside:
        return list(own)
    return sorted([*own, *inside], key=lambda f: (rank_of(family, f) or 0, str(f)))


def find(run_dir: str | Path, family: str, **fields: int) -> RankFile:
    """One rank's file of a family: the per-rank file when it exists, else the rank's file in a
    container, else the per-rank path (which does not exist: the caller's open says so)."""
    own = path(run_dir, family, **fields)
    if own.exists() or _layout.FILES[family].stream is None:
        return own
    for m in members(run_dir, family, **{k: v for k, v in fields.items() if k != "rank"}):
        if m.rank == fields.get("rank"):
            return m
    return own


# ------------------------------------------------------------------ containers (MPILENS_FILES=host)
class Member:
    """One rank's file of a family kept in a container: the rank's chunks of the family's stream,
    in index order, read when asked. Reads like a pathlib.Path for the readers."""

    def __init__(self, family: str, rank: int, item: int, container: Path, chunks: list[tuple[int, int]]):
        self.family, self.rank, self.item, self.container, self.chunks = family, rank, item, container, chunks

    @property
    def name(self) -> str:
        """How messages name it: the container and the rank."""
        return f"{self.container.parent.name}/{self.container.name}[rank {self.rank}]"

    def __str__(self) -> str:
        return f"{self.container}[{self.family} of rank {self.rank}]"

    def __repr__(self) -> str:
        return f"Member({self.family!r}, rank={self.rank}, {str(self.container)!r}, {len(self.chunks)} chunks)"

    @property
    def size(self) -> int:
        """Bytes of the rank's file (its chunks' data)."""
        return sum(n for _, n in self.chunks)

    def exists(self) -> bool:
        """Always: the index named it."""
        return True

    def read_bytes(self) -> bytes:
        """The rank's file: its chunks, each checked against its head; RunDirectoryError when the
        data is not what the index says."""
        stream = _layout.FILES[self.family].stream
        out = []
        with os.fdopen(open_regular(self.container), "rb") as f:  # a container is read as any file of a run
            for offset, length in self.chunks:
                f.seek(offset)
                head = f.read(_layout.CONTAINER_CHUNK.size)
                if len(head) < _layout.CONTAINER_CHUNK.size:
                    raise RunDirectoryError(f"{self.container}: the index names a chunk at byte {offset} "
                                            "beyond the end of the data (damaged container)")
                magic, rank, kind, item, n, _, _ = _layout.CONTAINER_CHUNK.unpack(head)
                if (magic, rank, kind, item, n) != (_layout.MAGIC_CONTAINER, self.rank, stream, self.item, length):
                    raise RunDirectoryError(f"{self.container}: the index names a chunk of rank {self.rank} at "
                                            f"byte {offset}, the data holds something else there (damaged container)")
                data = f.read(length)
                if len(data) < length:
                    raise RunDirectoryError(f"{self.container}: the chunk at byte {offset} is cut short "
                                            "(damaged container)")
                out.append(data)
        return b"".join(out)

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        """The rank's file as text."""
        return self.read_bytes().decode(encoding, errors)

    def open(self, mode: str = "rb") -> io.IOBase:
        """The rank's file as a file object in memory (reading only)."""
        if mode not in ("r", "rb", "rt"):
            raise ValueError(f"a file in a container opens for reading only, not {mode!r}")
        raw = io.BytesIO(self.read_bytes())
        return raw if "b" in mode else io.TextIOWrapper(raw, encoding="utf-8")


RankFile = Path | Member

_FNV_PRIME, _FNV_BASIS = 16777619, 2166136261


def fnv1a_rows(rows):
    """The FNV-1a (32 bits) of each row of a 2-D uint8 array: the check the runtime writes into a
    record (ml_fnv1a), computed for all records at once."""
    import numpy as np

    h = np.full(len(rows), _FNV_BASIS, dtype=np.uint64)
    for i in range(rows.shape[1]):
        h = ((h ^ rows[:, i]) * np.uint64(_FNV_PRIME)) & np.uint64(0xFFFFFFFF)
    return h.astype(np.uint32)


def _checks(raw: bytes) -> list[bool]:
    """Which 32-byte index records of `raw` carry a valid check (FNV-1a of their first 28 bytes)."""
    import numpy as np

    rec = np.frombuffer(raw, dtype=np.uint8).reshape(-1, _layout.CONTAINER_INDEX.size)
    stored = rec[:, -4:].copy().view("<u4").ravel()
    return list(fnv1a_rows(rec[:, :-4]) == stored)


def read_index(index: Path) -> list[tuple[int, int, int, int, int, int]]:
    """The records of a container's index: (offset, length, rank, stream, item, thread), in order.
    A torn or never-written tail (a process killed while appending) is left out; a record that
    fails its check before valid ones, or that names data beyond the data file, is damage:
    RunDirectoryError. Read once per state of the index (its size and time)."""
    try:
        st = index.stat()
    except OSError as err:
        raise RunDirectoryError(f"{index}: cannot read ({err.strerror})") from err
    return _read_index(str(index), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _read_index(name: str, size: int, mtime_ns: int) -> list[tuple[int, int, int, int, int, int]]:
    index = Path(name)
    raw = index.read_bytes()
    size = _layout.CONTAINER_INDEX.size
    raw = raw[:len(raw) - len(raw) % size]
    if not raw:
        return []
    ok = _checks(raw)
    last_good = max((i for i, good in enumerate(ok) if good), default=-1)
    bad = [i for i in range(last_good + 1) if not ok[i]]
    if bad:
        raise RunDirectoryError(f"{index}: index record {bad[0]} of {len(ok)} is damaged (check mismatch); "
                                "the container cannot be read safely")
    data = index.with_suffix(Path(_layout.CONTAINER_DATA_PATH).suffix)
    try:
        data_size = os.stat(data).st_size
    except OSError as err:
        raise RunDirectoryError(f"{index}: its data file {data.name} is missing ({err.strerror})") from err
    out = []
    for i in range(last_good + 1):
        offset, length, rank, stream, item, thread, _ = _layout.CONTAINER_INDEX.unpack_from(raw, i * size)
        if offset + _layout.CONTAINER_CHUNK.size + length > data_size:
            raise RunDirectoryError(f"{index}: index record {i} names bytes {offset}-"
                                    f"{offset + _layout.CONTAINER_CHUNK.size + length} of {data.name}, which has "
                                    f"{data_size} (damaged container)")
        out.append((offset, length, rank, stream, item, thread))
    return out


def containers(run_dir: str | Path, family: str, **fields: int) -> list[Path]:
    """The index files of the containers in a family's folder (fields given are fixed)."""
    if _layout.FILES[family].stream is None:
        return []
    top = folder(run_dir, family, **fields)
    pattern = _layout.CONTAINER_INDEX_PATH.replace("{group:06d}", "[0-9]" * 6)
    return sorted(top.parent.glob(f"{top.name}/{pattern}")) if "*" in top.name else sorted(top.glob(pattern))


def members(run_dir: str | Path, family: str, **fields: int) -> list[Member]:
    """The ranks' files of a family found in containers (MPILENS_FILES=host), by rank."""
    stream = _layout.FILES[family].stream
    out: list[Member] = []
    for index in containers(run_dir, family, **fields):
        data = index.with_suffix(Path(_layout.CONTAINER_DATA_PATH).suffix)
        item = fields.get("snapshot")
        if item is None and "snapshot" in _fields(PATTERNS[family]):
            item = int(index.parent.name)
        chunks: dict[int, list[tuple[int, int]]] = {}
        for offset, length, rank, kind, it, _ in read_index(index):
            if kind == stream and (item is None or it == item):
                chunks.setdefault(rank, []).append((offset, length))
        out += [Member(family, r, item or 0, data, c) for r, c in chunks.items()]
    return sorted(out, key=lambda m: (m.rank, m.item))


def fields_of(family: str, file: str | RankFile) -> dict[str, int] | None:
    """The fields of a family's file from its name, e.g. {"rank": 3}; None when it does not match.
    `file` may be a path in the run directory or relative to it (its last components are matched),
    or a rank's file in a container."""
    if isinstance(file, Member):
        out = {"rank": file.rank}
        if "snapshot" in _fields(PATTERNS[family]):
            out["snapshot"] = file.item
        return out
    parts = Path(file).parts
    depth = len(Path(PATTERNS[family]).parts)
    m = _regex(family).fullmatch("/".join(parts[-depth:]))
    return {k: int(v) for k, v in m.groupdict().items()} if m else None


def rank_of(family: str, file: str | RankFile) -> int | None:
    """The rank a family's file belongs to, from its name (None when the name does not say)."""
    f = fields_of(family, file)
    return None if f is None else f.get("rank")


def _regex(family: str, template: str | None = None) -> re.Pattern[str]:
    """A regular expression matching the family's paths (or `template`'s), fields as named groups."""
    out = []
    for literal, name, _, _ in string.Formatter().parse(template if template is not None else PATTERNS[family]):
        out.append(re.escape(literal))
        if name:
            out.append(f"(?P<{name}>\\d+)")
    return re.compile("".join(out))


def field_values(run_dir: str | Path, family: str, field: str) -> list[int]:
    """The values a field takes among the directories of a family, e.g. the snapshot numbers for
    which pcontrol/NNNN/ exists (whether or not it holds files yet)."""
    template = PATTERNS[family]
    comps = template.split("/")
    for i, comp in enumerate(comps):
        if field in _fields(comp):
            head = "/".join(comps[: i + 1])
            rx = _regex(family, head)
            found = set()
            for p in Path(run_dir).glob(_fill(head, "*", {})):
                m = rx.fullmatch(p.relative_to(run_dir).as_posix())
                if m and (p.is_dir() or i == len(comps) - 1):
                    found.add(int(m.group(field)))
            return sorted(found)
    raise KeyError(f"{family} has no field {field!r}")


def _own_folder(family: str) -> str | None:
    """The first folder of a family's pattern when only its own kind uses it (the counters_* files
    share counters/, the memory_* files memory/; partial and intervals share ranks/, so neither owns it)."""
    top, sep, _ = PATTERNS[family].partition("/")
    if not sep or "{" in top:
        return None
    kind = family.split("_")[0]
    sharing = {f.split("_")[0] for f, p in PATTERNS.items() if p.partition("/")[0] == top}
    return top if sharing == {kind} else None


def present(run_dir: str | Path, family: str) -> bool:
    """Whether a run directory holds a family: its file (a pattern without fields), its own folder
    (as trace/ or papi/: the mode was on even when no rank has written yet), else one of its files."""
    if not _fields(PATTERNS[family]):
        return path(run_dir, family).exists()
    own = _own_folder(family)
    if own is not None:
        return (Path(run_dir) / own).is_dir()
    return bool(files(run_dir, family))


def modes(run_dir: str | Path) -> frozenset[str]:
    """The modes whose data a run directory holds (names of MODES), from the files present."""
    return frozenset(m for m, fam in MODES.items() if present(run_dir, fam))


# ------------------------------------------------------------------ one function per family
def meta_file(run_dir: str | Path) -> Path:
    """meta.json of a run directory."""
    return path(run_dir, "meta")


def open_regular(file: str | Path) -> int:
    """A read-only descriptor of a run directory's file, opened without following a link and only
    when it is a regular file (a FIFO would hang the reader, a device such as /dev/zero never
    ends); RunDirectoryError naming the file otherwise, FileNotFoundError when it is missing."""
    name = Path(file).name
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RunDirectoryError(f"{name} is a symbolic link (mpilens does not follow links in a run "
                                    "directory)") from None
        raise RunDirectoryError(f"{name}: cannot read ({err.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise RunDirectoryError(f"{name} is not a regular file (a FIFO, device or socket is never read)")
    return fd


def read_regular(file: str | Path | Member, limit: int | None = None) -> bytes:
    """The bytes of a run directory's file (open_regular), or of a rank's file in a container
    (MPILENS_FILES=host: its chunks, from the container read the same way); RunDirectoryError when
    it holds more than limit bytes."""
    if isinstance(file, Member):
        data = file.read_bytes()
        if limit is not None and len(data) > limit:
            raise RunDirectoryError(f"{file.name} is {len(data)} bytes, more than such a file ever holds ({limit})")
        return data
    fd = open_regular(file)
    try:
        size = os.fstat(fd).st_size
        if limit is not None and size > limit:
            raise RunDirectoryError(f"{Path(file).name} is {size} bytes, more than such a file ever holds ({limit})")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read() if limit is None else f.read(limit + 1)
    finally:
        os.close(fd)


def read_json(file: Path, problems: list[str], limit: int | None = None, missing_is_a_problem: bool = False) -> Any:
    """A JSON file of a run directory, parsed (read_regular), or None: when it is missing (named in
    problems only if missing_is_a_problem) or damaged (named in problems, with whether it was cut
    short)."""
    try:
        text = read_regular(file, limit).decode()
    except FileNotFoundError:
        if missing_is_a_problem:
            problems.append(f"{file.name} is missing")
        return None
    except RunDirectoryError as err:
        problems.append(str(err))
        return None
    except OSError as err:
        problems.append(f"{file.name}: cannot read ({err.strerror})")
        return None
    except UnicodeDecodeError as err:
        problems.append(f"{file.name} is damaged: not UTF-8 text (byte {err.start})")
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        # mpilens writes its JSON files whole (temporary file, then rename): one that does not end
        # with its closing brace was cut short, e.g. copied while being written or by a full disk
        cut = "; the file is truncated" if not text.rstrip().endswith(("}", "]")) else ""
        problems.append(f"{file.name} is damaged: {err.msg} (line {err.lineno}, column {err.colno}){cut}")
        return None


def claim_file(run_dir: str | Path) -> Path:
    """claim.json of a run directory (which run owns it)."""
    return path(run_dir, "claim")


def imports_file(run_dir: str | Path) -> Path:
    """imports.json of a run directory (the MPI functions called past the runtime)."""
    return path(run_dir, "imports")


def profile_file(run_dir: str | Path) -> Path:
    """profile.json of a run directory."""
    return path(run_dir, "profile")


def partial_files(run_dir: str | Path) -> list[RankFile]:
    """The per-rank payloads of ranks that ended without MPI_Finalize (or before aggregation)."""
    return files(run_dir, "partial")


def partial_dir(run_dir: str | Path) -> Path:
    """The folder of the per-rank payloads (created by `mpilens run` before the job starts)."""
    return folder(run_dir, "partial")


def intervals_files(run_dir: str | Path) -> list[RankFile]:
    """The MPILENS_INTERVALS files of a run directory, by rank."""
    return files(run_dir, "intervals")


def io_files(run_dir: str | Path) -> list[RankFile]:
    """The I/O-per-file files of a run directory (MPILENS_IO), by rank."""
    return files(run_dir, "io")


def snapshot_numbers(run_dir: str | Path) -> list[int]:
    """Numbers of the MPI_Pcontrol(3|4) snapshots a run directory holds."""
    return field_values(run_dir, "snapshot", "snapshot")


def snapshot_dir(run_dir: str | Path, number: int) -> Path:
    """The folder of MPI_Pcontrol snapshot `number`."""
    return folder(run_dir, "snapshot", snapshot=number)


def snapshot_files(run_dir: str | Path, number: int) -> list[RankFile]:
    """The per-rank files of MPI_Pcontrol snapshot `number`, by rank."""
    return files(run_dir, "snapshot", snapshot=number)


def trace_files(run_dir: str | Path) -> list[RankFile]:
    """The trace files of a run directory, by rank."""
    return files(run_dir, "trace")


def memory_files(run_dir: str | Path) -> list[RankFile]:
    """The memory files of a run directory, by rank."""
    return files(run_dir, "memory")


def memory_file(run_dir: str | Path, rank: int) -> RankFile:
    """The memory file of one rank (in a container: the index is read to find it; for every rank,
    list them with memory_files)."""
    return find(run_dir, "memory", rank=rank)


def memory_dir(run_dir: str | Path) -> Path:
    """The folder of memory mode."""
    return folder(run_dir, "memory")


def memory_functions_file(run_dir: str | Path) -> Path:
    """The function names the memory records refer to."""
    return path(run_dir, "memory_functions")


def counters_layout_file(run_dir: str | Path) -> Path:
    """counters/layout.json: names, types and offsets of the counters."""
    return path(run_dir, "counters_layout")


def counters_series_file(run_dir: str | Path, rank: int) -> RankFile:
    """A rank's counters time series."""
    return find(run_dir, "counters_series", rank=rank)


def counters_totals_file(run_dir: str | Path, rank: int) -> RankFile:
    """A rank's counters totals (written at MPI_Finalize)."""
    return find(run_dir, "counters_totals", rank=rank)


def live_file(live_dir: str | Path, rank: int) -> Path:
    """A rank's live counters file in the live folder (layout.json's live_dir: the run directory's
    live folder, or MPILENS_LIVE_DIR)."""
    return Path(live_dir) / Path(relative("counters_live", rank=rank)).name


def mpit_dir(run_dir: str | Path) -> Path:
    """The folder of mpit mode."""
    return folder(run_dir, "mpit")


def mpit_files(run_dir: str | Path) -> list[RankFile]:
    """The per-rank MPI_T series of mpit mode, by rank."""
    return files(run_dir, "mpit")


def papi_dir(run_dir: str | Path) -> Path:
    """The folder of papi mode."""
    return folder(run_dir, "papi")


def papi_files(run_dir: str | Path) -> list[RankFile]:
    """The per-rank PAPI files, by rank."""
    return files(run_dir, "papi")


def maps_files(run_dir: str | Path) -> list[RankFile]:
    """Each rank's memory map (modules, build ids, load biases), written with call sites on."""
    return files(run_dir, "maps")


def callsites_cache_file(run_dir: str | Path) -> Path:
    """The cache of the symbolised call sites (written by mpilens, not by the runtime)."""
    return path(run_dir, "callsites")
