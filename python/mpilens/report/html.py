"""The HTML report: one self-contained file (styles, scripts and data inline; no network access
needed to view it) made of the sections in report/sections, and the same figures as PNG files."""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from .. import __version__
from ..findings import Finding
from ..rundir import Run
from ..summary import Summary
from .sections import Context, all_sections, name_html

# nothing from the network: styles and scripts inline, images as data: URLs
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
COMMAND_MAX = 400  # characters of the command line shown under the title


def _asset(name: str) -> str:
    return resources.files("mpilens.report").joinpath("assets", name).read_text()


def _json_for_script(data: Any) -> str:
    # "</" would end the <script> element early
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def render(run: Run, summary: Summary, findings: list[Finding], step: Callable[[str], None] | None = None,
           cache: dict[str, Any] | None = None) -> str:
    """Return the report page. `cache`: what the sections computed already (Context.cache of an
    earlier report of the same run, e.g. the trace loaded for the text report); filled in."""
    ctx = Context(run, summary, findings, cache=cache if cache is not None else {})
    body: list[str] = []
    nav: list[str] = []
    for sec in all_sections():
        if step:
            step(sec.title)
        html = sec.html(ctx)
        if html is None:
            continue
        nav.append(f'<a href="#{sec.id}">{escape(sec.title)}</a>')
        body.append(f'<section id="{sec.id}"><h2>{escape(sec.title)}</h2>\n{html}\n</section>')
    cmd = (run.meta or {}).get("command")  # the whole of a long command line is in the tooltip
    command = " ".join(cmd) if isinstance(cmd, list) else ""
    lib = ((run.meta or {}).get("mpi") or {}).get("library", "")
    mpi = lib.splitlines()[0] if lib else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>mpilens report: {escape(run.path.name)}</title>
<style>{_asset("report.css")}</style>
</head>
<body>
<header><h1>mpilens report: {escape(run.path.name)}</h1>
<div class="sub">{name_html(command, COMMAND_MAX)}</div>
<div class="sub">{escape(mpi)} &middot; mpilens {escape(__version__)}</div></header>
<nav>{"".join(nav)}</nav>
<main>
{chr(10).join(body)}
</main>
<script type="application/json" id="ml-data">{_json_for_script(ctx.data)}</script>
<script>{_asset("report.js")}</script>
</body>
</html>
"""


def write_figures(run: Run, summary: Summary, findings: list[Finding], outdir: Path,
                  step: Callable[[str], None] | None = None, cache: dict[str, Any] | None = None) -> list[Path]:
    """Write every section's static figures as PNG files into outdir; return their paths. `cache`:
    as for render()."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure as MplFigure

    outdir.mkdir(parents=True, exist_ok=True)
    ctx = Context(run, summary, findings, cache=cache if cache is not None else {})
    written = []
    for sec in all_sections():
        for fig in sec.figures(ctx):
            if step:
                step(f"{sec.title}: {fig.name}.png")
            f = MplFigure(figsize=(8, 4.5), dpi=150)
            fig.draw(f)
            path = outdir / f"{fig.name}.png"
            f.savefig(path)
            written.append(path)
    return written
