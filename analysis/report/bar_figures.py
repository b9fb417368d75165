"""The report's bar charts, written as SVG text by :mod:`analysis.report.svg` (no matplotlib): the
trace page's per-phase figures, the diff page's categories, and the question figures that are bars.

Each function returns the SVG document as a string. :func:`draw` draws a question figure whose
spec ``kind`` is in :data:`DRAWINGS`; the other kinds (lines, a grid) are
:mod:`analysis.report.line_figures`'.
"""
from __future__ import annotations

import pandas as pd

from analysis.core.classify import CATEGORIES
from analysis.questions.records import FigureSpec, ResultsAnswer
from analysis.report.svg import CATEGORY_COLORS, PALETTE, Series, bar_chart
from cs336_profile.contract import MIB
from cs336_profile.contract import PHASES as PHASE_ORDER


def completed(table: pd.DataFrame) -> pd.DataFrame:
    """Rows whose ``status`` is ok (all rows without a status column)."""
    return table[table["status"] == "ok"] if "status" in table else table


def first_table(answer: ResultsAnswer, index: int = 0) -> pd.DataFrame:
    """The answer's ``index``-th table."""
    return list(answer.tables.values())[index]


def run_labels(table: pd.DataFrame, columns=("size", "context_length", "mode")) -> list[str]:
    """``small ctx128 train`` per row, from the ``columns`` the table has."""
    present = [c for c in columns if c in table]
    return [" ".join(("ctx" if c == "context_length" else "") + str(row[c]) for c in present)
            for _, row in table.iterrows()]


def palette_series(series: dict[str, object], errors: dict[str, object] | None = None) -> list[Series]:
    """Named value lists as :class:`Series` in palette order (``errors``: ± per name)."""
    return [Series(name, [float(v) for v in values], PALETTE[index % len(PALETTE)],
                   None if errors is None else [float(e) for e in errors[name]])
            for index, (name, values) in enumerate(series.items())]


def category_series(shares: pd.DataFrame, scale: float = 1.0) -> list[Series]:
    """One series per category column, in CATEGORIES order then the others, in its category colour."""
    order = [c for c in CATEGORIES if c in shares] + [c for c in shares if c not in CATEGORIES]
    return [Series(c, list(shares[c].fillna(0).to_numpy(dtype=float) * scale), CATEGORY_COLORS.get(c, "#CCCCCC"))
            for c in order]


def _phase_names(phases: dict[str, dict]) -> list[str]:
    return [p for p in PHASE_ORDER if p in phases] + [p for p in phases if p not in PHASE_ORDER]


# --------------------------------------------------------------------------- trace and diff pages
def phase_categories(phases: dict[str, dict]) -> str:
    """Stacked bars: kernel ms per pass of each phase, by category."""
    names = _phase_names(phases)
    shares = pd.DataFrame([phases[p]["by_category_ms_per_pass"] for p in names], index=names)
    return bar_chart(names, category_series(shares), "Kernel time by category, per phase",
                     "kernel time per pass (ms)", stacked=True, unit=" ms")


def phase_spans(phases: dict[str, dict]) -> str:
    """Grouped bars per phase: Python timer, CPU span, GPU projection, GPU busy and summed kernel time."""
    names = _phase_names(phases)
    views = {"Python timer": "python_ms_per_pass", "CPU span": "cpu_span_ms_per_pass",
             "GPU projection": "gpu_span_ms_per_pass", "GPU busy": "busy_ms_per_pass",
             "summed kernels": "kernel_ms_per_pass"}
    series = {label: [phases[p].get(key) or 0.0 for p in names] for label, key in views.items()}
    return bar_chart(names, palette_series(series), "Where each phase's time goes: CPU, GPU projection, busy GPU",
                     "ms per pass", horizontal=False, unit=" ms")


def category_diff(categories: pd.DataFrame, label_a: str, label_b: str) -> str:
    """Grouped horizontal bars: ms per step of each category in run A and run B."""
    series = palette_series({label_a: categories["a_ms_per_pass"], label_b: categories["b_ms_per_pass"]})
    return bar_chart(list(categories["category"]), series, "Kernel time by category", "kernel time per step (ms)",
                     unit=" ms")


# --------------------------------------------------------------------------- question figures
def trace_bars(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """One group of bars per trace: the spec's ``series`` ([label, column, scale]; a column the
    table lacks is left out, a missing value draws as 0), ``xlabel``, ``title``, and optionally
    ``xscale`` ("log") and ``xlim``."""
    table = first_table(answer)
    params = spec.params
    series = {label: table[column].fillna(0).to_numpy(dtype=float) * scale
              for label, column, scale in params["series"] if column in table}
    return bar_chart(list(table["trace"]), palette_series(series), params["title"], params["xlabel"],
                     log=params.get("xscale") == "log", limits=params.get("xlim"))


def category_stack(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """One stacked bar per trace of its ``<category>_share`` columns (in %), ``xlabel``, ``title``."""
    table = first_table(answer)
    shares = table[[c for c in table if c.endswith("_share") and c != "non_gemm_share"]]
    shares.columns = [c.removesuffix("_share") for c in shares.columns]
    return bar_chart(list(table["trace"]), category_series(shares, scale=100), spec.params["title"],
                     spec.params["xlabel"], stacked=True, unit=" %")


def bench_b(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Forward and backward ms per configuration, mean with ± std whiskers."""
    table = completed(first_table(answer))
    parts = [p for p in ("forward", "backward") if f"{p}_ms_mean" in table]
    series = palette_series({p: table[f"{p}_ms_mean"] for p in parts}, {p: table[f"{p}_ms_std"].fillna(0) for p in parts})
    return bar_chart(run_labels(table, ("size", "context_length", "warmup_steps")), series,
                     "Forward and backward time per configuration (last label: warm-up steps)",
                     "ms per pass (mean ± std)", horizontal=False, unit=" ms")


def mp_c(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Forward and backward speedup of bf16 autocast per configuration, with a line at 1×."""
    table = completed(first_table(answer))
    parts = [p for p in ("forward", "backward") if f"{p}_speedup" in table]
    return bar_chart(run_labels(table), palette_series({p: table[f"{p}_speedup"] for p in parts}),
                     "Speedup from bf16 autocast", "fp32 time / bf16 time (×)", horizontal=False, unit="×",
                     reference=1.0)


def mp_accum(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Absolute error of each accumulation loop on a log axis, with the value it printed."""
    table = first_table(answer)
    series = [Series("", list(table["abs_error"].clip(lower=1e-12).astype(float)), PALETTE[0])]
    return bar_chart(list(table["loop"]), series, "Adding 0.01 a thousand times",
                     "absolute error against 10.0 (log scale)", log=True, notes=[str(p) for p in table["printed"]])


def mp_b(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """LayerNorm's parts' largest relative error per dtype and compute, on a log axis."""
    table = first_table(answer)
    parts = [c for c in ("mean_rel_error_max", "spread_rel_error_max", "inv_rel_error_max", "output_rel_error_max")
             if c in table]
    rows = table[table["norm"] == "layernorm"] if (table["norm"] == "layernorm").any() else table
    series = {c.removesuffix("_rel_error_max").replace("spread", "variance").replace("inv", "1/sqrt"): rows[c]
              for c in parts}
    return bar_chart([f"{r.dtype} {r.compute}" for r in rows.itertuples()], palette_series(series),
                     "LayerNorm in low precision: each part's error (low = computed in the dtype, upcast = fp32 math)",
                     "largest relative error against fp32", horizontal=False, log=True)


def mem_d(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """MiB of one residual-stream activation per context length."""
    table = first_table(answer)
    series = [Series("", list(table["activation_mib"].astype(float)), PALETTE[0])]
    return bar_chart([str(n) for n in table["context_length"]], series, "One residual-stream activation in fp32",
                     "MiB (bytes / 1024²)", horizontal=False, unit=" MiB",
                     label_axis="context length")


def mem_e(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """The ten largest allocations, one bar per row: a site reached through different callers
    gets its caller in the label (equal labels would hide a bar's identity)."""
    table = first_table(answer).head(10)
    callers = table["stack"].str.split(" ← ").str[1].fillna("")
    repeated = table["site"].duplicated(keep=False) & (callers != "")
    labels = [f"{site}{f' ← {caller}' if twin else ''} ×{count}"
              for site, caller, twin, count in zip(table["site"], callers, repeated, table["count"])]
    series = [Series("", list(table["size_bytes"] / MIB), PALETTE[0])]
    return bar_chart(labels, series, "Largest allocations of the forward pass", "size of one allocation (MiB)",
                     unit=" MiB")


def compile_b(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """Eager against compiled ms per configuration, on a log axis."""
    table = completed(first_table(answer))
    series = palette_series({"eager": table["eager_ms"], "compiled": table["compiled_ms"]})
    return bar_chart(run_labels(table, ("size", "context_length", "timed")), series,
                     "Whole model: eager against torch.compile", "ms (forward, or whole step)", horizontal=False,
                     log=True, unit=" ms")


DRAWINGS = {"trace_bars": trace_bars, "category_stack": category_stack, "bench-b": bench_b, "mp-accum": mp_accum, "mp-b": mp_b, "mp-c": mp_c,
            "mem-d": mem_d, "mem-e": mem_e, "compile-b": compile_b}


def draw(spec: FigureSpec, answer: ResultsAnswer) -> str:
    """The question figure ``spec`` describes (a kind in :data:`DRAWINGS`), drawn from ``answer``."""
    return DRAWINGS[spec.kind](spec, answer)
