"""The runtime's layout (docs/architecture.md, "runtime/src layout"): a core that names no mode.

runtime/src/core/ is the process's life, settings, statistics, requests and the profile's files;
each mode lives in its folder under runtime/src/modes/ and joins the core through the table of
modes (core/ml_modes.h: lifecycle and event hooks) and the per-call dispatch of calls/. These
tests read the sources: no file of core/ includes a mode's header or names anything a mode's
header declares (a function, a variable, a macro), with one exception stated in the source,
trace mode's per-thread state (modes/trace/trace_thread.h: types only), which core/ml.h embeds
because the inlined trace events read it without a pointer to follow.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "runtime" / "src"
# the one mode header the core may include: types only, embedded in ml_thread_t
EMBEDDED = {"trace_thread.h"}
FOLDERS = {"core", "calls", "modes", "tools"}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)  # names inside strings are not references


def declared(header: Path) -> set[str]:
    """What a header declares at file scope that code calls or reads: functions (and function-like
    macros), variables, macros, enumerators. Types are left out: the core's thread state holds
    pointers to the modes' per-thread state (struct tags it never looks into)."""
    text = strip_comments(header.read_text())
    names: set[str] = set()
    names |= set(re.findall(r"^#\s*define\s+([A-Za-z_]\w*)", text, flags=re.M))
    for body in re.findall(r"\benum\b[^{;]*{([^}]*)}", text):
        names |= set(re.findall(r"\b((?:ml|ML)_\w+)\s*(?:=|,|$)", body.strip() + ","))
    for line in text.splitlines():
        if not line or line[0].isspace() or line.startswith(("#", "}", "{", "return", "if", "else")):
            continue
        if re.match(r"(?:typedef\s+)?(?:struct|union|enum)\s+\w+\s*[;{]|typedef\b", line):
            continue  # a type
        m = re.match(r"(?:[A-Za-z_][\w]*[\s*]+)+?\(?\*?\s*((?:ml|ML)_\w+)\s*[(\[;=]", line)
        if m:
            names.add(m.group(1))
    # include guards are not names anyone uses
    return {n for n in names if not n.endswith("_H")}


def mode_headers() -> list[Path]:
    return sorted(p for p in (SRC / "modes").rglob("*.h") if p.name not in EMBEDDED)


def core_declared() -> set[str]:
    return set().union(*(declared(h) for h in (SRC / "core").glob("*.h")))


def mode_declared(header: Path) -> set[str]:
    """What a mode's header declares of its own (not the core's types it names ahead)."""
    return declared(header) - core_declared()


def test_the_folders_are_the_layout():
    assert {p.name for p in SRC.iterdir() if p.is_dir()} == FOLDERS
    assert not [p.name for p in SRC.iterdir() if p.is_file()], "every source is in one of the folders"
    modes = {p.name for p in (SRC / "modes").iterdir() if p.is_dir()}
    assert {"trace", "counters", "memory", "mpit", "papi", "intervals", "io"} <= modes
    # every mode folder holds its header and its code; the table of modes lists each folder
    table = (SRC / "modes" / "modes.c").read_text()
    for m in sorted(modes):
        assert list((SRC / "modes" / m).glob("*.c")) and list((SRC / "modes" / m).glob("*.h")), m
        assert f'"{m}"' in table, f"modes/{m} has no entry in the table of modes"


def test_the_declared_names_are_found():
    """The parser of declarations finds what it must (else the test below would pass vacuously)."""
    names = set().union(*(mode_declared(h) for h in mode_headers()))
    for expected in ("ml_trace_done", "ml_trace_region", "ml_spc_on", "ml_spc_posted", "ML_SPC_COMMS",
                     "ml_mpit_comm_freed", "ml_memory_mark", "ml_papi_regions", "ml_io_wanted",
                     "ml_intervals_recorded", "ml_trace_filter_check", "ml_mpit_comm_named"):
        assert expected in names, expected
    core = core_declared()
    assert {"ml_now", "ml_hooks", "ml_req_watch", "ML_HOOKS"} <= core


def core_files() -> list[Path]:
    return sorted(p for p in (SRC / "core").iterdir() if p.suffix in (".c", ".h"))


@pytest.mark.parametrize("path", core_files(), ids=lambda p: p.name)
def test_core_names_no_mode(path: Path):
    mode_header_names = {h.name for h in (SRC / "modes").rglob("*.h")} - EMBEDDED
    text = path.read_text()
    included = set(re.findall(r'^#\s*include\s+"([^"]+)"', text, flags=re.M))
    assert not included & mode_header_names, f"{path.name} includes a mode's header"
    body = re.sub(r"\b(?:struct|union|enum)\s+\w+", "", strip_comments(text))  # tags are types
    words = set(re.findall(r"\b[A-Za-z_]\w*\b", body))
    for header in mode_headers():
        used = sorted(words & mode_declared(header))
        assert not used, f"{path.name} names {used}, declared by modes/{header.relative_to(SRC / 'modes')}"


def test_the_embedded_header_holds_types_only():
    text = strip_comments((SRC / "modes" / "trace" / "trace_thread.h").read_text())
    assert not re.search(r"^[^\s#}{][^;{]*\b\w+\s*\([^)]*\)\s*[;{]", text, flags=re.M), "a function in trace_thread.h"
    assert "#include \"" not in text


GENERATOR = [*sorted((SRC.parent / "spec").glob("*.yaml")), SRC.parent / "gen" / "generate.py"]


@pytest.mark.parametrize("path", GENERATOR, ids=lambda p: p.name)
def test_the_specs_and_the_generator_name_no_mode(path: Path):
    """The wrappers reach a mode only through calls/ml_observe.h: the specs say what a function
    means (semantics.yaml's keys), never which of a mode's functions to call, and the generator
    spells none (comments included: a name there would be a contract with a mode)."""
    words = set(re.findall(r"\b[A-Za-z_]\w*\b", path.read_text()))
    for header in mode_headers():
        used = sorted(words & mode_declared(header))
        assert not used, f"{path.name} names {used}, declared by modes/{header.relative_to(SRC / 'modes')}"
