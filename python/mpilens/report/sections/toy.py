"""Report section (example): the number of MPI functions the run called."""

from __future__ import annotations

from html import escape
from typing import Any

from . import Context, Section, section


@section
class ToySection(Section):
    """How many MPI functions the run called."""

    id, title, order = "toy", "Toy: MPI functions called", 95
    text_order = json_order = 85  # before the findings

    def html(self, ctx: Context) -> str | None:
        return f"<p>{escape(str(len(ctx.summary.functions)))} MPI functions were called.</p>"

    def text(self, ctx: Context) -> list[str] | None:
        return ["@ Toy", f"{len(ctx.summary.functions)} MPI functions were called."]

    def json(self, ctx: Context) -> dict[str, Any] | None:
        return {"toy_functions": len(ctx.summary.functions)}
