#!/usr/bin/env python3
"""Install the MPI matrix of the test suite (scripts/mpis.toml) under build/mpis/, without root.

Each MPI gets a venv of its own (their wheels all install `mpicc` and `mpirun` into bin/), made by
the Python that runs this script. A venv is (re)made only when its pinned packages changed: the
list installed is kept in build/mpis/<name>/.installed. pip's cache keeps the downloaded wheels.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
