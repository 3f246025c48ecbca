"""The rank x time heatmap of a counter (seeds/000, Fig. 3.12 and 3.14), with the per-rank totals on
the process grid (Fig. 3.15): drawn for `mpilens heatmap` and the report's counters section."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..counters_spc import grid_remap, rank_totals


def _cmap_with_gaps() -> Any:
    """Reds, with unmeasured cells grey rather than the colour of zero."""
    import matplotlib  # only where a figure is drawn: the text report never loads it (0.25 s)

    cmap = matplotlib.colormaps["Reds"].copy()
    cmap.set_bad("lightgrey")
    return cmap


def draw_heatmap(fig: Any, m: np.ndarray, times: np.ndarray, name: str, grid: tuple[int, int] | None = None) -> None:
    """Seed Fig. 3.12/3.14: rank x time heatmap (Reds, nearest); with a grid also Fig. 3.15's remap
    of the per-rank totals onto the process grid."""
    axes = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]}) if grid else [fig.add_subplot()]
    ax = axes[0]
    im = ax.imshow(np.ma.masked_invalid(m), cmap=_cmap_with_gaps(), interpolation="nearest", aspect="auto")
    ax.set_ylabel("MPI rank")
    ax.set_xlabel("snapshot (mean end time, s)")
    if len(times):
        ticks = np.unique(np.linspace(0, len(times) - 1, min(8, len(times))).astype(int))
        ax.set_xticks(ticks, [f"{times[i]:.1f}" for i in ticks])
    if m.shape[0] <= 32:
        ax.set_yticks(range(m.shape[0]))
    ax.set_title(f"{name} snapshot difference")
    fig.colorbar(im, ax=ax, label="counter value")
    if grid:
        img = grid_remap(rank_totals(m), grid)
        im2 = axes[1].imshow(np.ma.masked_invalid(img), cmap=_cmap_with_gaps(), interpolation="nearest")
        axes[1].set_title(f"total per rank, {grid[0]}x{grid[1]} grid")
        axes[1].set_xticks(range(grid[0]))
        axes[1].set_yticks(range(grid[1]))
        for r in range(min(len(m), grid[0] * grid[1])):
            axes[1].text(r % grid[0], r // grid[0], str(r), ha="center", va="center", fontsize=8)
        axes[1].set_xlabel("grid x (rank = y * W + x)")
        axes[1].set_ylabel("grid y")
        fig.colorbar(im2, ax=axes[1], label="total")
