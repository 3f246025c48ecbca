#!/usr/bin/env python3
"""Install the MPI matrix of the test suite (scripts/mpis.toml) under build/mpis/, without root.

Each MPI gets a venv of its own (their wheels all install `mpicc` and `mpirun` into bin/), made by
the Python that runs this script. A venv is (re)made only when its pinned packages changed: the
list installed is kept in build/mpis/<name>/.installed. pip's cache keeps the downloaded wheels.
mpi4py's own test suite, from its source distribution (the wheels do not carry it), is unpacked
into build/mpis/mpi4py-tests/ for the tests that run it under mpilens.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dest", type=Path, default=ROOT / "build" / "mpis")
    ap.add_argument("names", nargs="*", help="the MPIs to install (default: all of scripts/mpis.toml)")
    args = ap.parse_args()
    table = tomllib.loads((ROOT / "scripts" / "mpis.toml").read_text())
    common = table.pop("common", {}).get("packages", [])
    for name in args.names or list(table):
        if name not in table:
            raise SystemExit(f"install-mpis: {name} is not in scripts/mpis.toml ({', '.join(table)})")
        spec = table[name]
        if "installation" in spec:
            continue  # another entry's MPI, run another way
        prefix = args.dest / name
        want = "\n".join([*spec["packages"], *common, f"no_deps={bool(spec.get('no_deps'))}"]) + "\n"
        stamp = prefix / ".installed"
        if stamp.exists() and stamp.read_text() == want:
            continue
        print(f"install-mpis: {spec['title']} into {prefix}", flush=True)
        shutil.rmtree(prefix, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(prefix)], check=True)
        pip = [str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, *(["--no-deps"] if spec.get("no_deps") else []), *spec["packages"]], check=True)
        if common:
            subprocess.run([*pip, *common], check=True)
        stamp.write_text(want)
    mpi4py = [p for p in common if p.startswith("mpi4py==")]
    if mpi4py and not args.names:
        mpi4py_tests(args.dest / "mpi4py-tests", mpi4py[0])
    return 0


def mpi4py_tests(dest: Path, pin: str) -> None:
    """Unpack the test/ folder of mpi4py's source distribution `pin` into dest (once per pin)."""
    stamp = dest / ".installed"
    if stamp.exists() and stamp.read_text() == pin + "\n":
        return
    print(f"install-mpis: the test suite of {pin} into {dest}", flush=True)
    shutil.rmtree(dest, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "--no-binary", ":all:", "-d", tmp, pin], check=True)
        archive = next(Path(tmp).glob("mpi4py-*.tar.gz"))
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and "/test/" in m.name]
            for m in members:
                m.name = m.name.split("/test/", 1)[1]
            tar.extractall(dest, members=members, filter="data")
    stamp.write_text(pin + "\n")


if __name__ == "__main__":
    sys.exit(main())
