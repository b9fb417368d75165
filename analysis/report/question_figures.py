"""The question figures that are not plain bars (lines, log-log axes, a dtype grid), drawn with
matplotlib from a question's answer: one function per results-file question, looked up by the
spec's ``kind`` in :data:`RESULTS_DRAWINGS`. The bar charts, ``trace_bars`` and ``category_stack``
among them, are :mod:`analysis.report.bar_figures`'."""
from __future__ import annotations

import textwrap

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.records import FigureSpec, ResultsAnswer
from analysis.report.bar_figures import completed, first_table
from analysis.report.figures import PALETTE, legend_below, lengths_axis, new_figure, plain_log_y
from cs336_profile.contract import GIB, MIB

# dtype cells of mp-a: light colours under black text, the same dtype the same colour
DTYPE_COLORS = {"float32": "#56B4E9", "bfloat16": "#E69F00", "float16": "#F0E442"}

def bench_c(answer: ResultsAnswer) -> Figure:
    table = completed(first_table(answer))
    figure, (ax,) = new_figure()
    for label, rows in table.groupby(["size", "context_length", "mode"], sort=False):
        ax.errorbar(rows["warmup_steps"], rows["step_ms_mean"], yerr=rows["step_ms_std"].fillna(0), marker="o",
                    capsize=3, label=f"{label[0]} ctx{label[1]} {label[2]}")
    ax.set_xlabel("warm-up steps")
    ax.set_ylabel("step time, ms (mean ± std)")
    ax.set_xticks(sorted(table["warmup_steps"].unique()))
    plain_log_y(ax)
    legend_below(ax, ncols=2)
    ax.set_title("Measured step time by number of warm-up steps")
    return figure


def mp_a(answer: ResultsAnswer) -> Figure:
    table = first_table(answer).set_index("quantity")
    dtypes = sorted(set(table.to_numpy().ravel()))
    codes = table.apply(lambda column: column.map({d: i for i, d in enumerate(dtypes)})).to_numpy(dtype=float)
    figure, (ax,) = new_figure(height=0.35 * len(table) + 1.2)
    colors = [DTYPE_COLORS.get(str(d), "#CCCCCC") for d in dtypes]
    ax.imshow(codes, cmap=matplotlib.colors.ListedColormap(colors), vmin=0, vmax=max(len(dtypes) - 1, 1), aspect="auto")
    for (row, column), dtype in np.ndenumerate(table.to_numpy()):
        ax.text(column, row, dtype, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(table.columns)), [textwrap.fill(str(c), 16) for c in table.columns])  # side by side
    ax.set_yticks(range(len(table)), table.index)
    ax.grid(False)
    ax.set_title("dtype of each quantity, as observed")
    return figure


def mem_a(answer: ResultsAnswer) -> Figure:
    timeline = next(iter(answer.downloads.values()))
    figure, (ax,) = new_figure()
    for (mode, context), rows in timeline.groupby(["mode", "context_length"], sort=False):
        ax.plot(rows["time_ms"], rows["allocated_bytes"] / GIB, label=f"{mode}, ctx{context}")
    marks = first_table(answer, 1) if len(answer.tables) > 1 else pd.DataFrame()
    if {"mode", "phase", "reached_at_ms"} <= set(marks.columns):
        for mark in marks[marks["mode"] != "forward"].dropna(subset=["reached_at_ms"]).itertuples():
            ax.axvline(mark.reached_at_ms, color="grey", linestyle=":", linewidth=1)
            ax.annotate(f"{mark.phase.replace('_', ' ')} peak", (mark.reached_at_ms, 0.02),
                        xycoords=("data", "axes fraction"), rotation=90, fontsize=7, ha="right", va="bottom")
    ax.set_xlabel("ms from the step's first allocator event")
    ax.set_ylabel("allocated (GiB)")
    legend_below(ax)
    ax.set_title("Allocated memory over the recorded step, with when each phase reaches its peak")
    return figure


def mem_f(answer: ResultsAnswer) -> Figure:
    """Allocated memory over one step, each block's forward and backward range shaded under it."""
    timeline, spans = first_table(answer, 3), first_table(answer, 4)
    figure, (ax,) = new_figure()
    ax.plot(timeline["time_ms"], timeline["allocated_bytes"] / GIB, color=PALETTE[0])
    for index, span in enumerate(spans.itertuples()):
        colour = PALETTE[1] if span.phase == "forward" else PALETTE[2]
        ax.axvspan(span.start_ms, span.start_ms + span.dur_ms, color=colour, alpha=0.15 if index % 2 else 0.3, lw=0)
    ax.set_xlabel("time from the step's start (ms); shaded: blocks' forward (first colour) and backward ranges")
    ax.set_ylabel("allocated (GiB)")
    ax.set_title("Allocated memory over one training step, per TransformerBlock")
    return figure


def ckpt_b(answer: ResultsAnswer) -> Figure:
    """Peak memory per blocks per checkpoint group; OOM block sizes as crosses at the top."""
    table = first_table(answer)
    grouped = table[table["blocks_per_group"] > 0]
    done = completed(grouped)
    figure, (ax,) = new_figure()
    ax.plot(done["blocks_per_group"], done["peak_memory_bytes"] / GIB, marker="o", color=PALETTE[0])
    failed = grouped[grouped["status"] != "ok"]
    if len(failed):
        top = done["peak_memory_bytes"].max() / GIB if len(done) else 1.0
        ax.scatter(failed["blocks_per_group"], [top * 1.05] * len(failed), marker="x", color=PALETTE[1],
                   label="out of memory")
        ax.legend(frameon=False)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("blocks per checkpoint group K")
    ax.set_ylabel("peak allocated (GiB)")
    ax.set_title("Activation checkpointing: peak memory against K")
    return figure


def _peaks_by_context(ax, table: pd.DataFrame, column: str = "peak_memory_bytes", label_suffix: str = "",
                      linestyle: str = "-") -> None:
    """One line per mode (a mode keeps its colour across calls), OOM contexts as crosses on top."""
    for index, (mode, rows) in enumerate(table.groupby("mode", sort=False)):
        done = completed(rows)
        line, = ax.plot(done["context_length"], done[column] / GIB, marker="o", label=f"{mode}{label_suffix}",
                        color=PALETTE[index], linestyle=linestyle)
        oom = rows[rows["status"] != "ok"]
        if not oom.empty:
            ax.scatter(oom["context_length"], [ax.get_ylim()[1]] * len(oom), marker="x", color=line.get_color(),
                       label=f"{mode}{label_suffix}: OOM")
    lengths_axis(ax, table["context_length"], "context length")
    ax.set_ylabel("peak allocated (GiB)")


def mem_b(answer: ResultsAnswer) -> Figure:
    figure, (ax,) = new_figure()
    _peaks_by_context(ax, first_table(answer))
    legend_below(ax)
    ax.set_title("Peak memory per context length, fp32")
    return figure


def mem_c(answer: ResultsAnswer) -> Figure:
    table = first_table(answer, 1)
    figure, (ax,) = new_figure()
    for precision, linestyle in (("fp32", "-"), ("bf16", "--")):
        rows = table.rename(columns={f"{precision}_peak_bytes": "peak_memory_bytes"})
        _peaks_by_context(ax, rows, label_suffix=f" {precision}", linestyle=linestyle)
    legend_below(ax, ncols=2)
    ax.set_title("Peak memory, fp32 against bf16 autocast")
    return figure


def _by_head_dim(ax, table: pd.DataFrame, column: str, scale: float = 1.0) -> None:
    """One line per head dimension against the sequence length (completed cells only), log-log."""
    for head_dim, rows in completed(table).groupby("head_dim"):
        ax.plot(rows["seq_len"], rows[column] / scale, marker="o", label=f"d={head_dim}")
    lengths_axis(ax, table["seq_len"], "sequence length")
    if (table[column] > 0).any():
        plain_log_y(ax)


def _mark_oom(ax, table: pd.DataFrame) -> None:
    oom = table[table["status"] != "ok"]
    for seq_len in sorted(oom["seq_len"].unique()):
        ax.axvline(seq_len, color="grey", linestyle=":", linewidth=1)
        ax.annotate("OOM", (seq_len, 1), xycoords=("data", "axes fraction"), fontsize=7, ha="center", va="bottom")


def attn_a(answer: ResultsAnswer) -> Figure:
    table = first_table(answer)
    has_memory = table["memory_before_backward_bytes"].notna().any()
    figure, axes = new_figure(ncols=2 if has_memory else 1)
    _by_head_dim(axes[0], table, "forward_ms_mean")
    axes[0].set_ylabel("forward, ms")
    if has_memory:
        _by_head_dim(axes[1], table, "memory_before_backward_bytes", MIB)
        axes[1].set_ylabel("memory before backward (MiB)")
    for ax in axes:
        _mark_oom(ax, table)
    legend_below(axes[0])
    figure.suptitle("Eager attention: time" + (" and memory" if has_memory else "") + " against sequence length")
    return figure


def compile_a(answer: ResultsAnswer) -> Figure:
    table = first_table(answer)
    figure, axes = new_figure(ncols=2)
    for ax, part in zip(axes, ("forward", "backward")):
        for head_dim, rows in completed(table).groupby("head_dim"):
            ax.plot(rows["seq_len"], rows[f"{part}_speedup"], marker="o", label=f"d={head_dim}")
        ax.axhline(1, color="black", linewidth=0.8)
        lengths_axis(ax, table["seq_len"], "sequence length")
        ax.set_ylabel(f"{part}: eager / compiled (×)")
    legend_below(axes[0])
    figure.suptitle("Speedup of compiled attention over eager")
    return figure


def fsdp_b(answer: ResultsAnswer) -> Figure:
    """Mean lead of each block's all-gather (negative: the compute stream waited), one line per
    trace and rank, with the worst pass as a band below the mean."""
    table = first_table(answer)
    figure, (ax,) = new_figure()
    for index, ((trace, rank), rows) in enumerate(table.groupby(["trace", "rank"], sort=False)):
        rows = rows.sort_values("block")
        color = PALETTE[index % len(PALETTE)]
        ax.plot(rows["block"], rows["lead_ms"], marker="o", markersize=3, color=color, label=f"{trace}, rank {rank}")
        ax.fill_between(rows["block"], rows["min_lead_ms"], rows["lead_ms"], color=color, alpha=0.2, linewidth=0)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("block (layer)")
    ax.set_ylabel("all-gather lead, ms (below 0: compute waited)")
    legend_below(ax, ncols=1)
    ax.set_title("Did each block's all-gather finish before the forward pass needed it?")
    return figure


RESULTS_DRAWINGS = {
    "bench-c": bench_c, "mp-a": mp_a, "mem-a": mem_a, "mem-b": mem_b, "mem-c": mem_c,
    "mem-f": mem_f, "attn-a": attn_a, "ckpt-b": ckpt_b, "compile-a": compile_a, "fsdp-b": fsdp_b,
}


def draw(spec: FigureSpec, answer: ResultsAnswer) -> Figure:
    """The figure ``spec`` describes, drawn from ``answer``'s tables."""
    return RESULTS_DRAWINGS[spec.kind](answer)
