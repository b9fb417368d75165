"""The question figures that are not bars, written as SVG text by :mod:`analysis.report.svg_plot`
(no matplotlib): lines against warm-up steps, context or sequence length (log-2 axes, runs out of
memory as crosses), memory over a step, and the grid of dtypes.

Each function takes the figure spec and the question's answer and returns the SVG document;
:func:`draw` draws a spec whose ``kind`` is in :data:`DRAWINGS`. The bar charts are
:mod:`analysis.report.bar_figures`'.
"""
from __future__ import annotations

import pandas as pd

from analysis.questions.records import FigureSpec, ResultsAnswer
from analysis.report.bar_figures import completed, first_table
from analysis.report.svg import PALETTE
from analysis.report.svg_plot import Cross, Line, Mark, Panel, Span, cell_grid, line_chart
from cs336_profile.contract import GIB, MIB

# dtype cells of mp-a: light colours under black text, the same dtype the same colour
DTYPE_COLORS = {"float32": "#56B4E9", "bfloat16": "#E69F00", "float16": "#F0E442"}


def _floats(column: pd.Series, scale: float = 1.0) -> list[float]:
    return list(column.to_numpy(dtype=float) / scale)


def length_ticks(lengths: pd.Series) -> dict[float, str]:
    """A log-2 axis's ticks at the lengths themselves (256, 512, 1k, 16k: a side-by-side panel's
    axis has no room for 16,384)."""
    return {float(n): f"{int(n) // 1024}k" if n >= 1024 and n % 1024 == 0 else f"{int(n):,}" for n in sorted(lengths.unique())}


def power_ticks(values: pd.Series) -> dict[float, str]:
    """Ticks at the powers of two from the smallest value to the largest."""
    low, high = int(values.min()), int(values.max())
    return {float(2 ** k): f"{2 ** k:,}" for k in range(max(low, 1).bit_length() - 1, high.bit_length()) if 2 ** k <= high}


def bench_c(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Step time (mean ± std) against warm-up steps, one line per configuration."""
    table = completed(first_table(answer))
    lines = [Line(f"{size} ctx{context} {mode}", _floats(rows["warmup_steps"]), _floats(rows["step_ms_mean"]),
                  PALETTE[index % len(PALETTE)], errors=_floats(rows["step_ms_std"].fillna(0)))
             for index, ((size, context, mode), rows) in enumerate(table.groupby(["size", "context_length", "mode"], sort=False))]
    ticks = {float(n): f"{int(n)}" for n in sorted(table["warmup_steps"].unique())}
    panel = Panel(lines, "warm-up steps", "step time, ms (mean ± std)", y_log=True, x_ticks=ticks, unit=" ms")
    return line_chart([panel], "Measured step time by number of warm-up steps")


def mp_a(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """The dtype of each quantity (rows) in each setting (columns)."""
    table = first_table(answer).set_index("quantity")
    return cell_grid([str(q) for q in table.index], [str(c) for c in table.columns],
                     [[str(v) for v in row] for row in table.to_numpy()], DTYPE_COLORS, "dtype of each quantity, as observed")


def mem_a(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Allocated GiB over the step per mode and context, a dotted mark where each phase peaks."""
    timeline = next(iter(answer.downloads.values()))
    lines = [Line(f"{mode}, ctx{context}", _floats(rows["time_ms"]), _floats(rows["allocated_bytes"], GIB),
                  PALETTE[index % len(PALETTE)], dots=False)
             for index, ((mode, context), rows) in enumerate(timeline.groupby(["mode", "context_length"], sort=False))]
    peaks = first_table(answer, 1) if len(answer.tables) > 1 else pd.DataFrame()
    marks = ()
    if {"mode", "phase", "reached_at_ms"} <= set(peaks.columns):
        marks = tuple(Mark(float(peak.reached_at_ms), f"{peak.phase.replace('_', ' ')} peak", top=False)
                      for peak in peaks[peaks["mode"] != "forward"].dropna(subset=["reached_at_ms"]).itertuples())
    panel = Panel(lines, "ms from the step's first allocator event", "allocated (GiB)", marks=marks, unit=" GiB")
    return line_chart([panel], "Allocated memory over the recorded step, with when each phase reaches its peak")


def mem_f(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Allocated memory over one step, each block's forward and backward range shaded under it."""
    timeline, spans = first_table(answer, 3), first_table(answer, 4)
    line = Line("", _floats(timeline["time_ms"]), _floats(timeline["allocated_bytes"], GIB), PALETTE[0], dots=False)
    shaded = tuple(Span(float(span.start_ms), float(span.start_ms + span.dur_ms), PALETTE[1 if span.phase == "forward" else 2],
                        0.15 if index % 2 else 0.3, f"blocks' {span.phase} ranges")
                   for index, span in enumerate(spans.itertuples()))
    panel = Panel([line], "time from the step's start (ms)", "allocated (GiB)", spans=shaded, unit=" GiB")
    return line_chart([panel], "Allocated memory over one training step, per TransformerBlock")


def ckpt_b(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Peak memory per blocks per checkpoint group (log-2 axis); OOM group sizes as crosses at the top."""
    table = first_table(answer)
    grouped = table[table["blocks_per_group"] > 0]
    done = completed(grouped)
    line = Line("", _floats(done["blocks_per_group"]), _floats(done["peak_memory_bytes"], GIB), PALETTE[0])
    crosses = tuple(Cross(float(k), PALETTE[1], "out of memory") for k in grouped[grouped["status"] != "ok"]["blocks_per_group"])
    panel = Panel([line], "blocks per checkpoint group K", "peak allocated (GiB)", x_log=True,
                  x_ticks=power_ticks(grouped["blocks_per_group"]), crosses=crosses, unit=" GiB")
    return line_chart([panel], "Activation checkpointing: peak memory against K")


def _peaks_by_context(table: pd.DataFrame, suffix: str = "", dashed: bool = False) -> tuple[list[Line], list[Cross]]:
    """One line per mode (a mode keeps its colour across calls), OOM contexts as crosses on top."""
    lines, crosses = [], []
    for index, (mode, rows) in enumerate(table.groupby("mode", sort=False)):
        done, color = completed(rows), PALETTE[index % len(PALETTE)]
        lines.append(Line(f"{mode}{suffix}", _floats(done["context_length"]), _floats(done["peak_memory_bytes"], GIB), color,
                          dashed=dashed))
        crosses += [Cross(float(n), color, f"{mode}{suffix}: OOM") for n in rows[rows["status"] != "ok"]["context_length"]]
    return lines, crosses


def _peaks_panel(lines: list[Line], crosses: list[Cross], lengths: pd.Series) -> Panel:
    return Panel(lines, "context length", "peak allocated (GiB)", x_log=True, x_ticks=length_ticks(lengths),
                 crosses=tuple(crosses), unit=" GiB")


def mem_b(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Peak GiB per context length and mode, fp32."""
    table = first_table(answer)
    return line_chart([_peaks_panel(*_peaks_by_context(table), table["context_length"])], "Peak memory per context length, fp32")


def mem_c(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Peak GiB per context length and mode, fp32 solid against bf16 autocast dashed."""
    table = first_table(answer, 1)
    lines, crosses = [], []
    for precision, dashed in (("fp32", False), ("bf16", True)):
        more = _peaks_by_context(table.rename(columns={f"{precision}_peak_bytes": "peak_memory_bytes"}), f" {precision}", dashed)
        lines, crosses = lines + more[0], crosses + more[1]
    return line_chart([_peaks_panel(lines, crosses, table["context_length"])], "Peak memory, fp32 against bf16 autocast")


def _by_head_dim(table: pd.DataFrame, column: str, label: str, scale: float = 1.0, log: bool = True,
                 reference: float | None = None) -> Panel:
    """One line per head dimension against the sequence length (completed cells only), log-2 x;
    each sequence length with a run out of memory marked at the top."""
    lines = [Line(f"d={head_dim}", _floats(rows["seq_len"]), _floats(rows[column], scale), PALETTE[index % len(PALETTE)])
             for index, (head_dim, rows) in enumerate(completed(table).groupby("head_dim"))]
    oom = table[table["status"] != "ok"] if "status" in table else table.iloc[:0]
    marks = tuple(Mark(float(n), "OOM") for n in sorted(oom["seq_len"].unique()))
    return Panel(lines, "sequence length", label, x_log=True, y_log=log, x_ticks=length_ticks(table["seq_len"]), marks=marks,
                 reference=reference)


def attn_a(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Eager attention's forward ms and, where measured, memory before backward against sequence length."""
    table = first_table(answer)
    panels = [_by_head_dim(table, "forward_ms_mean", "forward, ms", log=bool((table["forward_ms_mean"] > 0).any()))]
    has_memory = table["memory_before_backward_bytes"].notna().any()
    if has_memory:
        panels.append(_by_head_dim(table, "memory_before_backward_bytes", "memory before backward (MiB)", MIB,
                                   log=bool((table["memory_before_backward_bytes"] > 0).any())))
    return line_chart(panels, "Eager attention: time" + (" and memory" if has_memory else "") + " against sequence length")


def compile_a(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Forward and backward speedup of compiled over eager attention, a line at 1×."""
    table = first_table(answer)
    panels = [_by_head_dim(table, f"{part}_speedup", f"{part}: eager / compiled (×)", log=False, reference=1.0)
              for part in ("forward", "backward")]
    return line_chart(panels, "Speedup of compiled attention over eager")


def fsdp_b(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Mean lead of each block's all-gather (negative: the compute stream waited), one line per
    trace and rank, with the worst pass as a band below the mean."""
    table = first_table(answer)
    lines = []
    for index, ((trace, rank), rows) in enumerate(table.groupby(["trace", "rank"], sort=False)):
        rows = rows.sort_values("block")
        lines.append(Line(f"{trace}, rank {rank}", _floats(rows["block"]), _floats(rows["lead_ms"]), PALETTE[index % len(PALETTE)],
                          lower=_floats(rows["min_lead_ms"])))
    panel = Panel(lines, "block (layer)", "all-gather lead, ms (below 0: compute waited)", reference=0.0, unit=" ms")
    return line_chart([panel], "Did each block's all-gather finish before the forward pass needed it?")


DRAWINGS = {
    "bench-c": bench_c, "mp-a": mp_a, "mem-a": mem_a, "mem-b": mem_b, "mem-c": mem_c,
    "mem-f": mem_f, "attn-a": attn_a, "ckpt-b": ckpt_b, "compile-a": compile_a, "fsdp-b": fsdp_b,
}


def draw(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """The question figure ``spec`` describes (a kind in :data:`DRAWINGS`), drawn from ``answer``."""
    return DRAWINGS[spec.kind](spec, answer)
