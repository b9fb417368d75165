"""Timeline of one measured step: the NVTX phase ranges above the GPU's operations, drawn from the
summary's ``timeline`` record (:mod:`analysis.step_timeline`); operations are drawn per stream and
coloured by category. Drawn as PNG: a step holds thousands of kernels.
"""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from analysis.report.figures import CATEGORY_COLORS, WIDTH_IN, new_figure

PHASE_COLORS = {"forward": "#4c72b0", "loss": "#8172b2", "backward": "#dd8452", "optimizer_step": "#55a868"}


def step_timeline(timeline: dict) -> Figure:
    """Bars of the first measured step on one row per stream, under the phase ranges."""
    bars, ranges = pd.DataFrame(timeline["bars"]), pd.DataFrame(timeline["phases"])
    title = timeline["title"]
    streams = sorted(bars["stream"].unique())
    rows = len(streams) + 1
    figure, (ax,) = new_figure(height=0.45 * rows + 1.3)
    for phase, group in ranges.groupby("phase"):
        ax.broken_barh(list(zip(group["start_ms"], group["dur_ms"])), (rows - 1, 0.8),
                       color=PHASE_COLORS.get(phase, "grey"), label=f"range: {phase}")
    for row, stream in enumerate(streams):
        on_stream = bars[bars["stream"] == stream]
        for category, group in on_stream.groupby("category"):
            ax.broken_barh(list(zip(group["start_ms"], group["dur_ms"])),
                           (rows - 2 - row, 0.8), color=CATEGORY_COLORS.get(category, "black"), linewidth=0,
                           label=category if row == 0 else None)
    ax.set_yticks([r + 0.4 for r in range(rows)], [f"GPU stream {s}" for s in reversed(streams)] + ["NVTX phases"])
    _time_axis(ax, timeline["duration_ms"], f"ms from the start of {title}", -0.35 if rows < 3 else -0.2)
    ax.set_title(f"Timeline of {title}: kernels under the NVTX phase ranges")
    figure.set_size_inches(WIDTH_IN, 0.45 * rows + 1.9)
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
    figure, (ax,) = new_figure(height=0.4 * rows + 1.3)
    colors = {"compute": "#9db4d6", "communication": "#d62728"}
    for row, (rank, stream) in enumerate(lanes):
        y = rows - 1 - row
        if stream is None:
            for phase, group in ranges[ranges["rank"] == rank].groupby("phase"):
                ax.broken_barh(list(zip(group["start_ms"], group["dur_ms"])), (y, 0.8),
                               color=PHASE_COLORS.get(phase, "grey"), label=f"range: {phase}")
            continue
        on_lane = bars[(bars["rank"] == rank) & (bars["stream"] == stream)]
        for kind, group in on_lane.groupby("kind"):
            ax.broken_barh(list(zip(group["start_ms"], group["dur_ms"])), (y, 0.8), color=colors[kind],
                           linewidth=0, label=kind)
    ax.set_yticks([rows - 1 - r + 0.4 for r in range(rows)],
                  [f"rank {rank} NVTX phases" if stream is None else f"rank {rank} stream {stream}"
                   for rank, stream in lanes])
    _time_axis(ax, timeline["duration_ms"], f"ms from the start of {timeline['title']} on any rank", -0.16)
    ax.set_title(f"Compute and communication kernels on every rank, {timeline['title']}")
    figure.set_size_inches(WIDTH_IN, 0.4 * rows + 1.9)
    return figure


def _time_axis(ax, duration_ms: float, xlabel: str, legend_y: float) -> None:
    """The time axis of a timeline and one legend entry per label, under the plot."""
    ax.set_xlim(0, duration_ms)
    ax.set_xlabel(xlabel)
    ax.grid(axis="y", visible=False)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), frameon=False, fontsize=7, ncols=4, loc="upper center",
              bbox_to_anchor=(0.5, legend_y))
