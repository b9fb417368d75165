"""Timeline of one measured step: the NVTX step and phase ranges above the GPU's kernels.

The trace is loaded again (``load_trace`` + ``label_ops``); kernels are drawn per stream and
coloured by category, ranges on their own rows. Drawn as PNG: a step holds thousands of kernels.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from analysis.classify import classify_kernels
from analysis.load import load_trace
from analysis.phases import RangeNames, label_ops
from analysis.report.figures import CATEGORY_COLORS, WIDTH_IN, new_figure

PHASE_COLORS = {"forward": "#4c72b0", "loss": "#8172b2", "backward": "#dd8452", "optimizer_step": "#55a868"}


def step_window(labelled_ops: pd.DataFrame, phase_ranges: pd.DataFrame, step_prefix: str = RangeNames.step_prefix
                ) -> tuple[str, int, int]:
    """(title, start_ns, end_ns) of the first measured step: from its first phase range start (or first
    op start) to its last op end; the whole run when there are no steps."""
    measured = labelled_ops[labelled_ops["measured"]]
    steps = [s for s in measured["step"].unique() if s]
    step = min(steps, key=lambda name: int(name.removeprefix(step_prefix))) if steps else ""
    ops = measured[measured["step"] == step] if step else measured
    ranges = phase_ranges[phase_ranges["step"] == step] if step else phase_ranges
    start = min(ops["start_ns"].min(), ranges["start_ns"].min()) if not ranges.empty else ops["start_ns"].min()
    end = max(ops["end_ns"].max(), ranges["end_ns"].max()) if not ranges.empty else ops["end_ns"].max()
    return (step or "whole capture"), int(start), int(end)


def step_timeline(trace_path: Path, names: RangeNames = RangeNames()) -> Figure:
    """Kernels of the first measured step on one row per stream, under the phase ranges."""
    labelled = label_ops(load_trace(trace_path), names)
    ops = labelled.ops
    title, start_ns, end_ns = step_window(ops, labelled.phase_ranges, names.step_prefix)
    ops = ops[(ops["start_ns"] >= start_ns) & (ops["end_ns"] <= end_ns)]
    ops = ops.assign(category=classify_kernels(ops["demangled_name"].astype(str))["category"]
                     .where(ops["op_kind"] == "kernel", ops["op_kind"]))
    ranges = labelled.phase_ranges
    ranges = ranges[(ranges["start_ns"] >= start_ns) & (ranges["end_ns"] <= end_ns)]
    streams = sorted(ops["stream_id"].unique())
    rows = len(streams) + 1
    figure, (ax,) = new_figure(height=0.45 * rows + 1.3)
    to_ms = 1e-6
    for phase, group in ranges.groupby("phase"):
        ax.broken_barh(list(zip((group["start_ns"] - start_ns) * to_ms, group["cpu_dur_ns"] * to_ms)), (rows - 1, 0.8),
                       color=PHASE_COLORS.get(phase, "grey"), label=f"range: {phase}")
    for row, stream in enumerate(streams):
        on_stream = ops[ops["stream_id"] == stream]
        for category, group in on_stream.groupby("category"):
            ax.broken_barh(list(zip((group["start_ns"] - start_ns) * to_ms, group["dur_ns"] * to_ms)),
                           (rows - 2 - row, 0.8), color=CATEGORY_COLORS.get(category, "black"), linewidth=0,
                           label=category if row == 0 else None)
    ax.set_yticks([r + 0.4 for r in range(rows)], [f"GPU stream {s}" for s in reversed(streams)] + ["NVTX phases"])
    ax.set_xlim(0, (end_ns - start_ns) * to_ms)
    ax.set_xlabel(f"ms from the start of {title}")
    ax.grid(axis="y", visible=False)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), frameon=False, fontsize=7, ncols=4, loc="upper center",
              bbox_to_anchor=(0.5, -0.35 if rows < 3 else -0.2))
    ax.set_title(f"Timeline of {title}: kernels under the NVTX phase ranges")
    figure.set_size_inches(WIDTH_IN, 0.45 * rows + 1.9)
    return figure
