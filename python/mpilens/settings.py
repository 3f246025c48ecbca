"""The table of MPILENS_* settings (runtime/spec/config.yaml), for `mpilens config` and the docs.
Validation itself is done by the runtime's own parser (see launch.check_settings)."""

from __future__ import annotations

from typing import Any

import yaml

from .build_info import build_dir


def load_settings() -> list[dict[str, Any]]:
    """Return the settings table: name, type, default, description (and choices, bounds)."""
    path = build_dir().parent / "runtime" / "spec" / "config.yaml"
    return yaml.safe_load(path.read_text())["settings"]
