"""Report section: MPI-IO per file (mpilens.io): a table of the files as the application opened
them, and a timeline of each rank's accesses (reads, writes, metadata calls) after MPI_Init."""

from __future__ import annotations

from html import escape
from typing import Any

from ... import _layout as L
from ... import units
from ...errors import RunDirectoryError
from .. import io_text
from . import Context, Figure, Section, legend, section
from . import sortable_td as td

WRITE_COLOR, READ_COLOR, META_COLOR = "#5b8db8", "#2e7d4f", "#b0793a"
SVG_MAX_RANKS = 64
SVG_MAX_ACCESSES = 20000


def _data(ctx: Context) -> Any:
    """The run's IORun, or None when it has no I/O per file."""
    if "io" not in ctx.run.modes:
        return None

    def load() -> Any:
        # what could not be read is one of the run's problems, as the trace's are (timeline.py)
        try:
            data = ctx.run.io
        except RunDirectoryError as err:
            ctx.run.problems.append(f"io: {err}")
            return None
        ctx.run.problems.extend(f"io: {p}" for p in data.problems if f"io: {p}" not in ctx.run.problems)
        return data
    return ctx.once("io", load)


def _files(ctx: Context) -> list[dict[str, Any]]:
    data = _data(ctx)
    return ctx.once("io_files", data.files) if data is not None else []


def _color(kind: int) -> str:
    if kind & L.IO_KIND_WRITE:
        return WRITE_COLOR
    if kind & L.IO_KIND_READ:
        return READ_COLOR
    return META_COLOR


def _timeline(data: Any) -> str:
    """Each rank's listed MPI-IO calls as bars on a time axis (inline SVG, hover for details)."""
    acc = data.accesses
    if len(acc) == 0:
        return ""
    ranks = sorted(set(int(r) for r in acc["rank"]))
    note = ""
    if len(ranks) > SVG_MAX_RANKS:
        ranks = ranks[:SVG_MAX_RANKS]
        note = f" The first {SVG_MAX_RANKS} ranks with I/O are drawn."
    acc = acc[[int(r) in set(ranks) for r in acc["rank"]]]
    if len(acc) > SVG_MAX_ACCESSES:
        acc = acc[:SVG_MAX_ACCESSES]
        note += f" The first {SVG_MAX_ACCESSES} calls are drawn."
    t0 = float(acc["t0_s"].min())
    t1 = float((acc["t0_s"] + acc["dur_s"]).max())
    span = max(t1 - t0, 1e-9)
    w, row, left, top = 900, 18, 60, 4
    h = top + row * len(ranks) + 24
    index = {r: i for i, r in enumerate(ranks)}

    def x(t: float) -> float:
        return left + (w - left - 10) * (t - t0) / span
    out = [f'<svg width="100%" viewBox="0 0 {w} {h}" role="img" style="max-width:{w}px" id="io-timeline">']
    for r, i in index.items():
        y = top + i * row
        out.append(f'<text x="{left - 6}" y="{y + row * 0.7:.1f}" font-size="11" text-anchor="end" '
                   f'fill="#5b6472">rank {r}</text>')
        out.append(f'<line x1="{left}" x2="{w - 10}" y1="{y + row / 2:.1f}" y2="{y + row / 2:.1f}" stroke="#e3e6ea"/>')
    for a in acc:
        r = int(a["rank"])
        y = top + index[r] * row + 2
        xa = x(float(a["t0_s"]))
        wa = max(x(float(a["t0_s"] + a["dur_s"])) - xa, 1.0)
        name = data.names[int(a["file"])] if 0 <= int(a["file"]) < len(data.names) else "?"
        fn = data.functions.get(r, {}).get(int(a["fn"]), "?")
        where = f", offset {int(a['offset'])}" if a["offset"] >= 0 else ""
        what = f", {units.size(int(a['bytes']))}" if a["bytes"] > 0 else ""
        out.append(f'<rect x="{xa:.1f}" y="{y}" width="{wa:.1f}" height="{row - 4}" fill="{_color(int(a["kind"]))}">'
                   f"<title>rank {r}: {escape(fn)} ({escape(io_text.kind_label(int(a['kind'])))}) on {escape(name)}"
                   f"{where}{what}, at {units.seconds(float(a['t0_s']))} for {units.seconds(float(a['dur_s']))}"
                   "</title></rect>")
    y = h - 6
    out.append(f'<text x="{left}" y="{y}" font-size="11" fill="#5b6472">{units.seconds(t0)}</text>')
    out.append(f'<text x="{w - 10}" y="{y}" font-size="11" text-anchor="end" fill="#5b6472">'
               f"{units.seconds(t1)} after MPI_Init</text>")
    out.append("</svg>")
    keys = legend((("write", WRITE_COLOR), ("read", READ_COLOR), ("open, close, sync, set_view, set_size", META_COLOR)))
    return (f'<p class="note">Each rank\'s MPI-IO calls in time (hover for the function, file, offset and size).'
            f"{note}</p><div class=\"legend\">{keys}</div>" + "".join(out))


@section
class IOSection(Section):
    """MPI-IO per file: bytes, calls by kind, times, slowest rank, file system; a timeline of accesses."""

    id, title, order = "io", "I/O per file", 70

    def html(self, ctx: Context) -> str | None:
        data = _data(ctx)
        files = _files(ctx)
        if data is None or not files:
            return None
        head = ["File (as opened)", "File system", "Ranks", "Written", "Read", "Writes indep./coll.",
                "Reads indep./coll.", "Nonblocking", "Write time", "Read time", "Metadata time", "Slowest rank"]
        rows = []
        for f in files:
            w, r, t = f["writes"], f["reads"], f["time_s"]
            fs = f"{f['fs_type']} on {f['mount']}" if f["fs_type"] else "not known"
            rows.append("<tr>" + "".join([
                td(f["name"], f["name"], "l"), td(fs, fs, "l"), td(len(f["ranks"]), str(len(f["ranks"]))),
                td(f["bytes_written"], units.size(f["bytes_written"])), td(f["bytes_read"], units.size(f["bytes_read"])),
                td(w["total"], f"{w['independent']} / {w['collective']}"),
                td(r["total"], f"{r['independent']} / {r['collective']}"),
                td(w["nonblocking"] + r["nonblocking"], str(w["nonblocking"] + r["nonblocking"])),
                td(t["write"], units.seconds(t["write"])), td(t["read"], units.seconds(t["read"])),
                td(t["meta"], units.seconds(t["meta"])),
                td(f["slowest_rank_time_s"], f"{f['slowest_rank']} ({units.seconds(f['slowest_rank_time_s'])})"),
            ]) + "</tr>")
        extra = [f"Not read: {p}" for p in data.problems]
        if data.incomplete:
            extra.append(f"Ranks {', '.join(map(str, data.incomplete))} ended before MPI_Finalize: their I/O is what "
                         "they did until then.")
        if data.dropped_files:
            extra.append(f"{sum(data.dropped_files.values())} files beyond MPILENS_IO_MAX_FILES are not recorded.")
        if data.dropped_accesses:
            extra.append(f"{sum(data.dropped_accesses.values())} calls beyond MPILENS_IO_ACCESSES are counted per file "
                         "but not drawn.")
        return ('<p class="note">Per file the application opened with MPI_File_open (by name as opened; a file '
                "opened by several ranks is one row). Times are summed over ranks; metadata is open, close, sync, "
                "set_view and set_size. <code>mpilens io RUN</code> has access sizes, offset patterns and per-rank detail.</p>"
                + "".join(f'<p class="note">{escape(e)}</p>' for e in extra)
                + '<div style="overflow-x:auto"><table class="ml-sortable" id="io-table"><thead><tr>'
                + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
                + _timeline(data))

    def text(self, ctx: Context) -> list[str] | None:
        files = _files(ctx)
        if not files:
            return None

        data = _data(ctx)
        out = [f"@ {self.title}"]
        for f in files:
            out += io_text.file_lines(f, detail=False)
        out += [f"not read: {p}" for p in data.problems]
        if data.incomplete:
            out.append(f"ranks that ended before MPI_Finalize: {', '.join(map(str, data.incomplete))}")
        return out

    def json(self, ctx: Context) -> dict[str, Any] | None:
        data = _data(ctx)
        if data is None:
            return None
        return {"io": data.to_json()}

    def figures(self, ctx: Context) -> list[Figure]:
        data = _data(ctx)
        if data is None or len(data.accesses) == 0:
            return []

        def draw(fig: Any) -> None:
            ax = fig.add_subplot()
            acc = data.accesses
            for a in acc:
                ax.barh(int(a["rank"]), float(a["dur_s"]), left=float(a["t0_s"]), height=0.6,
                        color=_color(int(a["kind"])))
            ax.set_xlabel("seconds after MPI_Init")
            ax.set_ylabel("rank")
            ax.set_title("MPI-IO calls per rank (blue write, green read, brown metadata)")
        return [Figure("io", draw)]
