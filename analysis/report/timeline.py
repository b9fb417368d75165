"""Timeline of one measured step: the NVTX phase ranges above the GPU's operations, drawn from the
summary's ``timeline`` record (:mod:`analysis.step_timeline`); operations are drawn per stream and
coloured by category. Drawn as PNG: a step holds thousands of kernels.

The phase ranges carry their names inside them and their boundaries run down through the streams
as dashed lines, so the phases need no legend; the category legend sits under the plot.
"""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from analysis.report.figures import CATEGORY_COLORS, WIDTH_IN, legend_below, new_figure

PHASE_FILL = ("#EEEEEE", "#D9D9D9")  # alternating, so neighbouring ranges stay apart
ROW_HEIGHT = 0.8
PHASE_FONT = 9
CHAR_WIDTH = 0.65  # of the font size, a generous average for a sans-serif name
PLOT_SHARE = 0.8  # of the figure's width, what the time axis spans (the stream labels take the rest)
CATEGORY_ORDER = {category: index for index, category in enumerate(CATEGORY_COLORS)}  # the legend's order


def _phase_ranges(ax, ranges: pd.DataFrame, row: int, duration_ms: float, streams_top: float, width_in: float) -> None:
    """Each range as a grey box with its name inside (where it fits) and dashed boundaries below."""
    points_per_ms = width_in * PLOT_SHARE * 72 / duration_ms
    for index, (_, phase) in enumerate(ranges.sort_values("start_ms").iterrows()):
        start, width = phase["start_ms"], phase["dur_ms"]
        ax.broken_barh([(start, width)], (row, ROW_HEIGHT), color=PHASE_FILL[index % 2], edgecolor="#777777",
                       linewidth=0.6)
        if width * points_per_ms >= len(phase["phase"]) * CHAR_WIDTH * PHASE_FONT:  # the name fits
            ax.text(start + width / 2, row + ROW_HEIGHT / 2, phase["phase"], ha="center", va="center",
                    fontsize=PHASE_FONT, clip_on=True)
        for edge in (start, start + width):
            ax.plot([edge, edge], [0, streams_top], color="#777777", linestyle="--", linewidth=0.6)


def step_timeline(timeline: dict, width: float = WIDTH_IN) -> Figure:
    """Bars of the first measured step on one row per stream, under the phase ranges, ``width``
    inches wide."""
    bars, ranges = pd.DataFrame(timeline["bars"]), pd.DataFrame(timeline["phases"])
    title = timeline["title"]
    streams = sorted(bars["stream"].unique())
    rows = len(streams) + 1
    figure, (ax,) = new_figure(height=0.5 * rows + 1.6, width=width)
    for row, stream in enumerate(streams):
        on_stream = bars[bars["stream"] == stream]
        for category, group in sorted(on_stream.groupby("category"), key=lambda item: CATEGORY_ORDER.get(item[0], 99)):
            ax.broken_barh(list(zip(group["start_ms"], group["dur_ms"])),
                           (rows - 2 - row, ROW_HEIGHT), color=CATEGORY_COLORS.get(category, "black"), linewidth=0,
                           label=category)
    _phase_ranges(ax, ranges, rows - 1, timeline["duration_ms"], rows - 1, width)
    ax.set_yticks([r + ROW_HEIGHT / 2 for r in range(rows)],
                  [f"GPU stream {s}" for s in reversed(streams)] + ["NVTX phases"])
    ax.set_xlim(0, timeline["duration_ms"])
    ax.set_ylim(-0.1, rows - 1 + ROW_HEIGHT + 0.1)
    ax.set_xlabel(f"ms from the start of {title}")
    ax.grid(axis="y", visible=False)
    legend_below(ax, ncols=4 if width <= WIDTH_IN else 8)
    ax.set_title(f"Timeline of {title}: kernels under the NVTX phase ranges")
    return figure
