"""The text report of `mpilens report` and its `--json` document, assembled like the HTML report
from the sections in report/sections (each section's text() lines and json() keys, in their
text_order and json_order)."""

from __future__ import annotations

from typing import Any

from ..findings import Finding
from ..rundir import Run
from ..summary import Summary
from .sections import Context, all_sections


def _context(run: Run, s: Summary, findings: list[Finding], timeline_findings: list[Any] | None,
             cache: dict[str, Any] | None) -> Context:
    ctx = Context(run, s, findings, cache=cache if cache is not None else {})
    if timeline_findings is not None:  # computed already by the caller
        ctx.cache.setdefault("trace_findings", timeline_findings)
    return ctx


def render(run: Run, s: Summary, findings: list[Finding], timeline_findings: list[Any] | None = None,
           cache: dict[str, Any] | None = None) -> str:
    """Return the text report. `timeline_findings`: the trace's findings when the caller has them;
    `cache`: what the sections computed already (Context.cache of the same run's reports)."""
    ctx = _context(run, s, findings, timeline_findings, cache)
    out: list[str] = []
    for sec in all_sections("text"):
        lines = sec.text(ctx)
        if lines is None:
            continue
        if out:
            out.append("")
        out += lines
    return "\n".join(out) + "\n"


def as_json(run: Run, s: Summary, findings: list[Finding], timeline_findings: list[Any] | None = None,
            cache: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the machine-readable report: summary figures and findings (arguments as for render())."""
    ctx = _context(run, s, findings, timeline_findings, cache)
    doc: dict[str, Any] = {}
    for sec in all_sections("json"):
        doc.update(sec.json(ctx) or {})
    return doc
