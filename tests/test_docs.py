"""The settings table of docs/configuration.md is the one generated from runtime/spec/config.yaml."""

from __future__ import annotations

import importlib.util

from conftest import ROOT


def test_readme_settings_table_is_current():
    spec = importlib.util.spec_from_file_location("readme_config", ROOT / "scripts" / "readme_config.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert mod.render(page) == page, "docs/configuration.md is stale: run .venv/bin/python scripts/readme_config.py"
