#!/usr/bin/env python3
"""Write the settings table of docs/configuration.md from runtime/spec/config.yaml.

The settings are declared once, in config.yaml; the table of docs/configuration.md between the
markers <!-- settings:begin --> and <!-- settings:end --> is generated from it (tests/test_docs.py
checks that it is current). Run after changing config.yaml:  .venv/bin/python scripts/readme_config.py
(The script keeps its name from when the table lived in README.md.)
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"
PAGE = ROOT / "docs" / "configuration.md"


def table() -> str:
    spec = yaml.safe_load((ROOT / "runtime" / "spec" / "config.yaml").read_text())
    rows = ["| variable | default | values | meaning |", "|---|---|---|---|"]
    for s in spec["settings"]:
        if s["type"] in ("enum", "list"):
            avail = s.get("available", s["choices"])
            values = ", ".join(f"`{c}`" for c in avail)
            later = [c for c in s["choices"] if c not in avail]
            if later:
                values += " (" + ", ".join(f"`{c}`" for c in later) + ": not built yet)"
            if s["type"] == "list":
                values = "comma separated: " + values
        elif s["type"] == "int":
            values = f"{s['min']} – {s['max']}"
        elif s["type"] == "bool":
            values = "`0`, `1`"
        else:
            values = s["type"]
        default = f"`{s['default']}`" if s["default"] != "" else "(empty)"
        desc = " ".join(str(s["description"]).split()).replace("|", "\\|").replace("<", "&lt;")
        rows.append(f"| `{s['name']}` | {default} | {values} | {desc} |")
    return "\n".join(rows)


def render(readme: str) -> str:
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"{PAGE.relative_to(ROOT)} lacks the markers {BEGIN} ... {END}")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main() -> int:
    old = PAGE.read_text()
    new = render(old)
    if new != old:
        PAGE.write_text(new)
        print(f"{PAGE.relative_to(ROOT)}: settings table updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
