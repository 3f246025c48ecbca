"""The table of MPILENS_* settings (runtime/spec/config.yaml), for `mpilens config` and the docs.
Validation itself is done by the runtime's own parser (see launch.check_settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load_settings() -> list[dict[str, Any]]:
    """Return the settings table: name, type, default, description (and choices, bounds)."""
    # a copy of runtime/spec/config.yaml the build puts in the package (the Makefile, pip's build)
    path = Path(__file__).resolve().parent / "_settings.yaml"
    return yaml.safe_load(path.read_text())["settings"]
