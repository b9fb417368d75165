"""The question figures, drawn with matplotlib from a question's answer and its figure spec.

:func:`draw` looks the spec's ``kind`` up in :data:`DRAWINGS`: ``trace_bars`` and
``category_stack`` are drawn from the spec's parameters alone (the nsys questions), the others are
one function per results-file question.
"""
from __future__ import annotations

import textwrap

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.records import FigureSpec, ResultsAnswer
from analysis.report.figures import (
    HEIGHT_IN,
    PALETTE,
    completed,
    first_table,
    grouped_bars,
    legend_below,
    lengths_axis,
    new_figure,
    plain_log,
    plain_log_y,
    run_labels,
    stacked,
)
from cs336_profile.contract import GIB, MIB

# dtype cells of mp-a: light colours under black text, the same dtype the same colour
DTYPE_COLORS = {"float32": "#56B4E9", "bfloat16": "#E69F00", "float16": "#F0E442"}

def bench_b(answer: ResultsAnswer) -> Figure:
    table = completed(first_table(answer))
    figure, (ax,) = new_figure()
    parts = [p for p in ("forward", "backward") if f"{p}_ms_mean" in table]
    grouped_bars(ax, run_labels(table, ("size", "context_length", "warmup_steps")),
                  {p: table[f"{p}_ms_mean"].to_numpy() for p in parts},
                  {p: table[f"{p}_ms_std"].fillna(0).to_numpy() for p in parts})
    ax.set_ylabel("ms per pass (mean ± std)")
    ax.set_title("Forward and backward time per configuration (last label: warm-up steps)")
    return figure


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


def mp_accum(answer: ResultsAnswer) -> Figure:
    table = first_table(answer)
    figure, (ax,) = new_figure(height=0.45 * len(table) + 1)
    errors = table["abs_error"].clip(lower=1e-12)
    ax.barh(table["loop"], errors, color=PALETTE[0])
    for y, (value, printed) in enumerate(zip(table["abs_error"], table["printed"])):
        ax.text(max(value, 1e-12), y, f"  {printed}", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("absolute error against 10.0 (log scale)")
    ax.set_title("Adding 0.01 a thousand times")
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


def mp_b(answer: ResultsAnswer) -> Figure:
    table = first_table(answer)
    parts = [c for c in ("mean_rel_error_max", "spread_rel_error_max", "inv_rel_error_max", "output_rel_error_max")
             if c in table]
    rows = table[table["norm"] == "layernorm"] if (table["norm"] == "layernorm").any() else table
    figure, (ax,) = new_figure()
    grouped_bars(ax, [f"{r.dtype} {r.compute}" for r in rows.itertuples()],
                 {c.removesuffix("_rel_error_max").replace("spread", "variance").replace("inv", "1/sqrt"):
                  rows[c].to_numpy() for c in parts})
    ax.set_yscale("log")
    ax.set_ylabel("largest relative error against fp32")
    ax.set_title("LayerNorm in low precision: each part's error (low = computed in the dtype, upcast = fp32 math)")
    return figure


def mp_c(answer: ResultsAnswer) -> Figure:
    table = completed(first_table(answer))
    figure, (ax,) = new_figure()
    parts = [p for p in ("forward", "backward") if f"{p}_speedup" in table]
    grouped_bars(ax, run_labels(table), {p: table[f"{p}_speedup"].to_numpy() for p in parts})
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_ylabel("fp32 time / bf16 time (×)")
    ax.set_title("Speedup from bf16 autocast")
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


def mem_d(answer: ResultsAnswer) -> Figure:
    table = first_table(answer)
    figure, (ax,) = new_figure(height=2.8)
    ax.bar(table["context_length"].astype(str), table["activation_mib"], color=PALETTE[0])
    ax.set_xlabel("context length")
    ax.set_ylabel("MiB (bytes / 1024²)")
    ax.set_title("One residual-stream activation in fp32")
    return figure


def mem_e(answer: ResultsAnswer) -> Figure:
    table = first_table(answer).head(10)
    # One bar per row: a site reached through different callers gets its caller in the label, and
    # bars sit at positions, not at categorical labels (equal labels would draw on one bar).
    callers = table["stack"].str.split(" ← ").str[1].fillna("")
    repeated = table["site"].duplicated(keep=False) & (callers != "")
    labels = [f"{site}{f' ← {caller}' if twin else ''} ×{count}"
              for site, caller, twin, count in zip(table["site"], callers, repeated, table["count"])]
    figure, (ax,) = new_figure(height=0.35 * len(table) + 1)
    y = np.arange(len(table))
    ax.barh(y, table["size_bytes"] / MIB, color=PALETTE[0])
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("size of one allocation (MiB)")
    ax.set_title("Largest allocations of the forward pass")
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


def compile_b(answer: ResultsAnswer) -> Figure:
    table = completed(first_table(answer))
    figure, (ax,) = new_figure()
    grouped_bars(ax, run_labels(table, ("size", "context_length", "timed")),
                  {"eager": table["eager_ms"].to_numpy(), "compiled": table["compiled_ms"].to_numpy()})
    plain_log_y(ax)
    ax.set_ylabel("ms (forward, or whole step)")
    ax.set_title("Whole model: eager against torch.compile")
    return figure


def trace_labels(table: pd.DataFrame) -> list[str]:
    return list(table["trace"])


def per_trace_bars(table: pd.DataFrame, series: dict[str, np.ndarray]) -> tuple[Figure, Axes]:
    """Horizontal grouped bars, one group per trace (top to bottom in table order), in a figure
    whose height grows with the number of traces so every label stays readable."""
    labels = trace_labels(table)
    figure, (ax,) = new_figure(height=max(HEIGHT_IN, 0.12 * len(labels) * len(series) + 1.2))
    y = np.arange(len(labels))
    height = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series.items()):
        ax.barh(y + (index - (len(series) - 1) / 2) * height, values, height, label=name)
    ax.set_yticks(y, labels)
    ax.margins(y=0.01)
    ax.invert_yaxis()
    # Below the plot: the last rows hold the largest models, whose bars reach the lower right.
    legend_below(ax, ncols=len(series))
    return figure, ax


def trace_bars(spec: FigureSpec, answer: ResultsAnswer) -> Figure:
    """One group of bars per trace: the spec's ``series`` ([label, column, scale]; a column the
    table lacks is left out, a missing value draws as 0), ``xlabel``, ``title``, and optionally
    ``xscale`` ("log") and ``xlim``."""
    table = first_table(answer)
    params = spec.params
    series = {label: table[column].fillna(0).to_numpy(dtype=float) * scale
              for label, column, scale in params["series"] if column in table}
    figure, ax = per_trace_bars(table, series)
    if params.get("xscale") == "log":
        plain_log(ax.xaxis, ax.set_xscale)
    if params.get("xlim"):
        ax.set_xlim(*params["xlim"])
    ax.set_xlabel(params["xlabel"])
    ax.set_title(params["title"])
    return figure


def category_stack(spec: FigureSpec, answer: ResultsAnswer) -> Figure:
    """One stacked bar per trace of its ``<category>_share`` columns (in %), ``xlabel``, ``title``."""
    table = first_table(answer)
    shares = table[[c for c in table if c.endswith("_share") and c != "non_gemm_share"]]
    shares.columns = [c.removesuffix("_share") for c in shares.columns]
    figure, (ax,) = new_figure(height=0.4 * len(table) + 1.4)
    stacked(ax, trace_labels(table), shares, scale=100)
    ax.invert_yaxis()
    ax.set_xlabel(spec.params["xlabel"])
    ax.set_title(spec.params["title"])
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
    "bench-b": bench_b, "bench-c": bench_c, "mp-accum": mp_accum, "mp-a": mp_a, "mp-b": mp_b, "mp-c": mp_c,
    "mem-a": mem_a, "mem-b": mem_b, "mem-c": mem_c, "mem-d": mem_d, "mem-e": mem_e, "mem-f": mem_f,
    "attn-a": attn_a, "ckpt-b": ckpt_b, "compile-a": compile_a, "compile-b": compile_b, "fsdp-b": fsdp_b,
}
SPEC_DRAWINGS = {"trace_bars": trace_bars, "category_stack": category_stack}


def draw(spec: FigureSpec, answer: ResultsAnswer) -> Figure:
    """The figure ``spec`` describes, drawn from ``answer``'s tables."""
    if spec.kind in SPEC_DRAWINGS:
        return SPEC_DRAWINGS[spec.kind](spec, answer)
    return RESULTS_DRAWINGS[spec.kind](answer)
