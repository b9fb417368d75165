"""Timeline of one measured step: the NVTX phase ranges above the GPU's operations, drawn from the
summary's ``timeline`` record (:mod:`analysis.step_timeline`); operations are drawn per stream and
coloured by category. Drawn as PNG: a step holds thousands of kernels.

The phase ranges carry their names inside them and their boundaries run down through the streams
as dashed lines, so the phases need no legend; the category legend sits under the plot. The rank
timeline draws one step of every rank of a multi-GPU trace the same way, compute against
communication kernels.
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
KIND_COLORS = {"compute": "#BBBBBB", "communication": CATEGORY_COLORS["communication"]}  # grey under teal
CATEGORY_ORDER = {category: index for index, category in enumerate(CATEGORY_COLORS)}  # the legend's order


def _phase_ranges(ax, ranges: pd.DataFrame, row: float, duration_ms: float, width_in: float,
                  boundaries_from: float | None = None) -> None:
    """Each range as a grey box at ``row`` with its name inside (where it fits), and dashed
    boundaries down to ``boundaries_from`` when given."""
    points_per_ms = width_in * PLOT_SHARE * 72 / duration_ms
    for index, (_, phase) in enumerate(ranges.sort_values("start_ms").iterrows()):
        start, width = phase["start_ms"], phase["dur_ms"]
        ax.broken_barh([(start, width)], (row, ROW_HEIGHT), color=PHASE_FILL[index % 2], edgecolor="#777777",
                       linewidth=0.6)
        if width * points_per_ms >= len(phase["phase"]) * CHAR_WIDTH * PHASE_FONT:  # the name fits
            ax.text(start + width / 2, row + ROW_HEIGHT / 2, phase["phase"], ha="center", va="center",
                    fontsize=PHASE_FONT, clip_on=True)
        for edge in (start, start + width) if boundaries_from is not None else ():
            ax.plot([edge, edge], [boundaries_from, row], color="#777777", linestyle="--", linewidth=0.6)


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
    _phase_ranges(ax, ranges, rows - 1, timeline["duration_ms"], width, boundaries_from=0)
    ax.set_yticks([r + ROW_HEIGHT / 2 for r in range(rows)],
                  [f"GPU stream {s}" for s in reversed(streams)] + ["NVTX phases"])
    _time_axis(ax, timeline["duration_ms"], rows, f"ms from the start of {title}", width)
    ax.set_title(f"Timeline of {title}: kernels under the NVTX phase ranges")
    return figure


def rank_timeline(timeline: dict) -> Figure:
    """One step on every rank, one clock: per rank its phase ranges, then its streams with compute
    and communication kernels in two colours (the communication record's ``timeline``)."""
    bars, ranges = pd.DataFrame(timeline["bars"]), pd.DataFrame(timeline["phases"])
    ranked = set(ranges["rank"]) if not ranges.empty else set()
    lanes = []  # (rank, None) for a rank's phase ranges, when it has some; (rank, stream) per stream
    for rank in sorted(bars["rank"].unique()):
        lanes += [(rank, None)] if rank in ranked else []
        lanes += [(rank, s) for s in sorted(bars.loc[bars["rank"] == rank, "stream"].unique())]
    rows = len(lanes)
    figure, (ax,) = new_figure(height=0.45 * rows + 1.6)
    for row, (rank, stream) in enumerate(lanes):
        y = rows - 1 - row
        if stream is None:
            _phase_ranges(ax, ranges[ranges["rank"] == rank], y, timeline["duration_ms"], WIDTH_IN)
            continue
        on_lane = bars[(bars["rank"] == rank) & (bars["stream"] == stream)]
        for kind, group in on_lane.groupby("kind"):
            ax.broken_barh(list(zip(group["start_ms"], group["dur_ms"])), (y, ROW_HEIGHT), color=KIND_COLORS[kind],
                           linewidth=0, label=kind)
    ax.set_yticks([rows - 1 - r + ROW_HEIGHT / 2 for r in range(rows)],
                  [f"rank {rank} NVTX phases" if stream is None else f"rank {rank} stream {stream}"
                   for rank, stream in lanes])
    _time_axis(ax, timeline["duration_ms"], rows, f"ms from the start of {timeline['title']} on any rank", WIDTH_IN)
    ax.set_title(f"Compute and communication kernels on every rank, {timeline['title']}")
    return figure


def _time_axis(ax, duration_ms: float, rows: int, xlabel: str, width_in: float) -> None:
    """The time axis of a timeline over ``rows`` lanes, and its legend under the plot."""
    ax.set_xlim(0, duration_ms)
    ax.set_ylim(-0.1, rows - 1 + ROW_HEIGHT + 0.1)
    ax.set_xlabel(xlabel)
    ax.grid(axis="y", visible=False)
    legend_below(ax, ncols=4 if width_in <= WIDTH_IN else 8)
