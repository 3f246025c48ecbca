"""Report section of the counters mode: the main SPC-style counters per rank, eager limit and the
MPI's pvars (present and absent), and rank x time heatmaps of user and collective bytes sent
(seed Fig. 3.12/3.14), embedded as PNG so the page stays self-contained."""

from __future__ import annotations

import base64
import io
from html import escape
from typing import Any

from ...units import counter as format_value
from ..heatmap import draw_heatmap
from . import Context, Figure, Section, section

HEATMAPS = ["BYTES_SENT_USER", "BYTES_SENT_MPI", "UNEXPECTED", "MAX_POSTED_RECVQ"]
TABLE = ["MPI_CALLS", "BYTES_SENT_USER", "BYTES_RECEIVED_USER", "BYTES_SENT_MPI", "BYTES_RECEIVED_MPI",
         "MESSAGES_SENT_USER", "EAGER_MESSAGES", "NOT_EAGER_MESSAGES", "UNEXPECTED", "MAX_POSTED_RECVQ",
         "RECV_POST_TO_COMPLETE_TIME"]


def counters_of(ctx: Context):
    """The run's counters, loaded once per report (None without counters)."""
    def read():
        return ctx.run.counters if "counters" in ctx.run.modes else None
    return ctx.once("spc", read)


def _shown(c: Any) -> list[str]:
    """Heatmaps worth drawing: counters measured and not zero everywhere."""
    out = []
    for name in HEATMAPS:
        if not c.layout.available(name):
            continue
        m, _ = c.matrix(name)
        if m.size and (m[m == m] != 0).any():
            out.append(name)
    return out


@section
class CountersSection(Section):
    """The counters mode: main counters per rank, pvars, rank x time heatmaps."""

    id, title, order = "counters", "Low-level counters", 27

    def html(self, ctx: Context) -> str | None:
        c = counters_of(ctx)
        if c is None:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        lay = c.layout
        ranks = sorted(c.totals)
        head = "".join(f"<th>{escape(n)}</th>" for n in TABLE)
        body = "".join(
            f"<tr><td>{r}</td>" + "".join(f'<td data-v="{c.value(n, r) if c.value(n, r) is not None else ""}">'
                                          f"{escape(format_value(n, c.value(n, r), 'not measured'))}</td>"
                                          for n in TABLE) + "</tr>"
            for r in ranks)
        e = lay.doc.get("eager") or {}
        eager = (f"eager limit {e.get('shm_limit')} B on a node ({escape(str(e.get('shm_source')))}), "
                 f"{e.get('net_limit')} B between nodes ({escape(str(e.get('net_source')))})"
                 if e.get("shm_limit") is not None or e.get("net_limit") is not None
                 else "no eager limit found among the MPI's cvars: eager counters not measured")
        pv = [x["pvar"] for x in lay.doc["counters"] if x["type"].startswith("pvar")]
        absent = ", ".join(f"{escape(p['name'])} ({escape(p['why'])})" for p in lay.doc.get("pvars_absent", []))
        imgs = []
        for name in _shown(c):
            m, times = c.matrix(name)
            fig = plt.figure(figsize=(7, 4))
            draw_heatmap(fig, m, times, name)
            fig.tight_layout()
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=90)
            plt.close(fig)
            imgs.append(f'<figure><img alt="{escape(name)} heatmap" src="data:image/png;base64,'
                        f'{base64.b64encode(buf.getvalue()).decode()}"><figcaption>{escape(name)}: per rank and '
                        f"snapshot ({lay.doc['snapshot_ms']} ms)</figcaption></figure>")
        return (f"<p>{escape(lay.doc['mpi'])} ({escape(str(lay.doc.get('transport')))}); counter groups "
                f"{escape(', '.join(lay.groups))}; {eager}. MPI pvars read: {escape(', '.join(pv) or 'none')}"
                f"{'; absent: ' + absent if absent else ''}.</p>"
                f'<table class="ml-sortable" id="counters-table"><thead><tr><th>Rank</th>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>" + "".join(imgs) +
                '<p class="note">All counters: <code>mpilens counters RUNDIR</code>; a heatmap of any counter: '
                "<code>mpilens heatmap RUNDIR --counter NAME [--grid WxH]</code>.</p>")

    def figures(self, ctx: Context) -> list[Figure]:
        c = counters_of(ctx)
        if c is None:
            return []

        figs = []
        for name in _shown(c):
            def draw(fig: Any, name: str = name) -> None:
                m, times = c.matrix(name)
                draw_heatmap(fig, m, times, name)
            figs.append(Figure(f"counters-{name.lower()}", draw))
        return figs
