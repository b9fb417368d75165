"""Figures of the report, drawn with matplotlib (Agg) from the analysis tables and saved as SVG.

One function per question page (``QUESTION_FIGURES[id](answer) -> Figure``) and the figures of a
trace page and a diff page. Functions draw and return the figure; :func:`save` writes and closes it.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.classify import CATEGORIES  # noqa: E402
from analysis.questions.results_files import ResultsAnswer  # noqa: E402
from cs336_profile.contract import GIB, MIB  # noqa: E402
from cs336_profile.contract import PHASES as PHASE_ORDER  # noqa: E402

WIDTH_IN = 7.5
HEIGHT_IN = 3.6
RASTER_DPI = 150  # PNG figures (the timeline) stay sharp on high-density screens
PALETTE = plt.get_cmap("tab20").colors
CATEGORY_COLORS = {category: PALETTE[index % len(PALETTE)] for index, category in enumerate(CATEGORIES)}

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: small files that scale
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
})


def save(figure: Figure, path: Path) -> Path:
    """Write the figure (format from the suffix) and free it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, bbox_inches="tight", dpi=RASTER_DPI)
    plt.close(figure)
    return path


def new_figure(height: float = HEIGHT_IN, ncols: int = 1) -> tuple[Figure, list]:
    figure, axes = plt.subplots(1, ncols, figsize=(WIDTH_IN, height), squeeze=False, layout="constrained")
    return figure, list(axes[0])


def _ok(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["status"] == "ok"] if "status" in table else table


def _labels(table: pd.DataFrame, columns=("size", "context_length", "mode")) -> list[str]:
    present = [c for c in columns if c in table]
    return [" ".join(("ctx" if c == "context_length" else "") + str(row[c]) for c in present)
            for _, row in table.iterrows()]


def _grouped_bars(ax, labels: list[str], series: dict[str, np.ndarray], errors: dict[str, np.ndarray] | None = None,
                  colors: dict[str, tuple] | None = None) -> None:
    """Bars of several series side by side for each label."""
    x = np.arange(len(labels))
    width = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series.items()):
        ax.bar(x + (index - (len(series) - 1) / 2) * width, values, width, label=name,
               yerr=None if errors is None else errors.get(name), capsize=2,
               color=None if colors is None else colors.get(name))
    ax.set_xticks(x, labels, rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    ax.legend(frameon=False)


def _first(answer: ResultsAnswer, index: int = 0) -> pd.DataFrame:
    return list(answer.tables.values())[index]


# --------------------------------------------------------------------------- results questions
def bench_b(answer: ResultsAnswer) -> Figure:
    table = _ok(_first(answer))
    figure, (ax,) = new_figure()
    parts = [p for p in ("forward", "backward") if f"{p}_ms_mean" in table]
    _grouped_bars(ax, _labels(table, ("size", "context_length", "warmup_steps")),
                  {p: table[f"{p}_ms_mean"].to_numpy() for p in parts},
                  {p: table[f"{p}_ms_std"].fillna(0).to_numpy() for p in parts})
    ax.set_ylabel("ms per pass (mean ± std)")
    ax.set_title("Forward and backward time per configuration (last label: warm-up steps)")
    return figure


def bench_c(answer: ResultsAnswer) -> Figure:
    table = _ok(_first(answer))
    figure, (ax,) = new_figure()
    for label, rows in table.groupby(["size", "context_length", "mode"], sort=False):
        ax.errorbar(rows["warmup_steps"], rows["step_ms_mean"], yerr=rows["step_ms_std"].fillna(0), marker="o",
                    capsize=3, label=f"{label[0]} ctx{label[1]} {label[2]}")
    ax.set_xlabel("warm-up steps")
    ax.set_ylabel("step time, ms (mean ± std)")
    ax.set_xticks(sorted(table["warmup_steps"].unique()))
    _plain_log_y(ax)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))  # beside the lines, not over them
    ax.set_title("Measured step time by number of warm-up steps")
    return figure


def mp_accum(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
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
    table = _first(answer).set_index("quantity")
    dtypes = sorted(set(table.to_numpy().ravel()))
    codes = table.apply(lambda column: column.map({d: i for i, d in enumerate(dtypes)})).to_numpy(dtype=float)
    figure, (ax,) = new_figure(height=0.35 * len(table) + 1.2)
    ax.imshow(codes, cmap=matplotlib.colors.ListedColormap(PALETTE[: len(dtypes) * 2 : 2]), aspect="auto")
    for (row, column), dtype in np.ndenumerate(table.to_numpy()):
        ax.text(column, row, dtype, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(table.columns)), table.columns)
    ax.set_yticks(range(len(table)), table.index)
    ax.grid(False)
    ax.set_title("dtype of each quantity, as observed")
    return figure


def mp_c(answer: ResultsAnswer) -> Figure:
    table = _ok(_first(answer))
    figure, (ax,) = new_figure()
    parts = [p for p in ("forward", "backward") if f"{p}_speedup" in table]
    _grouped_bars(ax, _labels(table), {p: table[f"{p}_speedup"].to_numpy() for p in parts})
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_ylabel("fp32 time / bf16 time (×)")
    ax.set_title("Speedup from bf16 autocast")
    return figure


def mem_a(answer: ResultsAnswer) -> Figure:
    timeline = _first(answer, 1)
    figure, (ax,) = new_figure()
    for (mode, context), rows in timeline.groupby(["mode", "context_length"], sort=False):
        ax.plot(rows["event_index"], rows["allocated_bytes"] / GIB, label=f"{mode}, ctx{context}")
    ax.set_xlabel("allocator event")
    ax.set_ylabel("allocated (GiB)")
    ax.legend(frameon=False)
    ax.set_title("Allocated memory over the recorded step")
    return figure


def _peaks_by_context(ax, table: pd.DataFrame, column: str = "peak_memory_bytes", label_suffix: str = "",
                      linestyle: str = "-") -> None:
    """One line per mode (a mode keeps its colour across calls), OOM contexts as crosses on top."""
    for index, (mode, rows) in enumerate(table.groupby("mode", sort=False)):
        done = _ok(rows)
        line, = ax.plot(done["context_length"], done[column] / GIB, marker="o", label=f"{mode}{label_suffix}",
                        color=PALETTE[2 * index], linestyle=linestyle)
        oom = rows[rows["status"] != "ok"]
        if not oom.empty:
            ax.scatter(oom["context_length"], [ax.get_ylim()[1]] * len(oom), marker="x", color=line.get_color(),
                       label=f"{mode}{label_suffix}: OOM")
    _lengths_axis(ax, table["context_length"], "context length")
    ax.set_ylabel("peak allocated (GiB)")
    ax.legend(frameon=False)


def mem_b(answer: ResultsAnswer) -> Figure:
    figure, (ax,) = new_figure()
    _peaks_by_context(ax, _first(answer))
    ax.set_title("Peak memory per context length, fp32")
    return figure


def mem_c(answer: ResultsAnswer) -> Figure:
    table = _first(answer, 1)
    figure, (ax,) = new_figure()
    for precision, linestyle in (("fp32", "-"), ("bf16", "--")):
        rows = table.rename(columns={f"{precision}_peak_bytes": "peak_memory_bytes"})
        _peaks_by_context(ax, rows, label_suffix=f" {precision}", linestyle=linestyle)
    ax.set_title("Peak memory, fp32 against bf16 autocast")
    return figure


def mem_d(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    figure, (ax,) = new_figure(height=2.8)
    ax.bar(table["context_length"].astype(str), table["activation_mib"], color=PALETTE[0])
    ax.set_xlabel("context length")
    ax.set_ylabel("MB (bytes / 1024²)")
    ax.set_title("One residual-stream activation in fp32")
    return figure


def mem_e(answer: ResultsAnswer) -> Figure:
    table = _first(answer).head(10)
    # One bar per row: a site reached through different callers gets its caller in the label, and
    # bars sit at positions, not at categorical labels (equal labels would draw on one bar).
    callers = table["stack"].str.split(" <- ").str[1].fillna("")
    repeated = table["site"].duplicated(keep=False) & (callers != "")
    labels = [f"{site}{f' ← {caller}' if twin else ''} ×{count}"
              for site, caller, twin, count in zip(table["site"], callers, repeated, table["count"])]
    figure, (ax,) = new_figure(height=0.35 * len(table) + 1)
    y = np.arange(len(table))
    ax.barh(y, table["size_bytes"] / MIB, color=PALETTE[2])
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("size of one allocation (MiB)")
    ax.set_title("Largest allocations of the forward pass")
    return figure


def _by_head_dim(ax, table: pd.DataFrame, column: str, scale: float = 1.0) -> None:
    """One line per head dimension against the sequence length (completed cells only), log-log."""
    for head_dim, rows in _ok(table).groupby("head_dim"):
        ax.plot(rows["seq_len"], rows[column] / scale, marker="o", label=f"d={head_dim}")
    _lengths_axis(ax, table["seq_len"], "sequence length")
    if (table[column] > 0).any():
        _plain_log_y(ax)


def _lengths_axis(ax, lengths: pd.Series, label: str) -> None:
    """Log-2 x axis labelled with the lengths themselves (256, 1,024, ...)."""
    ax.set_xscale("log", base=2)
    ticks = sorted(lengths.unique())
    ax.set_xticks(ticks, [f"{int(length):,}" for length in ticks])
    ax.minorticks_off()
    ax.set_xlabel(label)


def _plain_log_y(ax) -> None:
    """Log y axis with plain numbers (0.5, 2, 100) instead of powers of ten."""
    _plain_log(ax.yaxis, ax.set_yscale)


def _plain_log(axis, set_scale) -> None:
    set_scale("log")
    # Ticks at 1, 2 and 5 of each decade: a range within one decade (50–550 ms) still gets labels.
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1, 2, 5)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _mark_oom(ax, table: pd.DataFrame) -> None:
    oom = table[table["status"] != "ok"]
    for seq_len in sorted(oom["seq_len"].unique()):
        ax.axvline(seq_len, color="grey", linestyle=":", linewidth=1)
        ax.annotate("OOM", (seq_len, 1), xycoords=("data", "axes fraction"), fontsize=7, ha="center", va="bottom")


def attn_a(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    has_memory = table["memory_before_backward_bytes"].notna().any()
    figure, axes = new_figure(ncols=2 if has_memory else 1)
    _by_head_dim(axes[0], table, "forward_ms_mean")
    axes[0].set_ylabel("forward, ms")
    if has_memory:
        _by_head_dim(axes[1], table, "memory_before_backward_bytes", MIB)
        axes[1].set_ylabel("memory before backward (MiB)")
    for ax in axes:
        _mark_oom(ax, table)
    axes[0].legend(frameon=False)
    figure.suptitle("Eager attention: time" + (" and memory" if has_memory else "") + " against sequence length")
    return figure


def compile_a(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    figure, axes = new_figure(ncols=2)
    for ax, part in zip(axes, ("forward", "backward")):
        for head_dim, rows in _ok(table).groupby("head_dim"):
            ax.plot(rows["seq_len"], rows[f"{part}_speedup"], marker="o", label=f"d={head_dim}")
        ax.axhline(1, color="black", linewidth=0.8)
        _lengths_axis(ax, table["seq_len"], "sequence length")
        ax.set_ylabel(f"{part}: eager / compiled (×)")
    axes[0].legend(frameon=False)
    figure.suptitle("Speedup of compiled attention over eager")
    return figure


def compile_b(answer: ResultsAnswer) -> Figure:
    table = _ok(_first(answer))
    figure, (ax,) = new_figure()
    _grouped_bars(ax, _labels(table, ("size", "context_length", "timed")),
                  {"eager": table["eager_ms"].to_numpy(), "compiled": table["compiled_ms"].to_numpy()})
    _plain_log_y(ax)
    ax.set_ylabel("ms (forward, or whole step)")
    ax.set_title("Whole model: eager against torch.compile")
    return figure


# --------------------------------------------------------------------------- nsys questions
def _trace_labels(table: pd.DataFrame) -> list[str]:
    return list(table["trace"])


def _per_trace_bars(table: pd.DataFrame, series: dict[str, np.ndarray]) -> tuple[Figure, plt.Axes]:
    """Horizontal grouped bars, one group per trace (top to bottom in table order), in a figure
    whose height grows with the number of traces so every label stays readable."""
    labels = _trace_labels(table)
    figure, (ax,) = new_figure(height=max(HEIGHT_IN, 0.12 * len(labels) * len(series) + 1.2))
    y = np.arange(len(labels))
    height = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series.items()):
        ax.barh(y + (index - (len(series) - 1) / 2) * height, values, height, label=name)
    ax.set_yticks(y, labels)
    ax.margins(y=0.01)
    ax.invert_yaxis()
    # Below the plot: the last rows hold the largest models, whose bars reach the lower right.
    figure.legend(frameon=False, loc="outside lower center", ncols=len(series))
    return figure, ax


def nsys_a(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    series = {"nsys forward range": table["nsys_forward_ms"].to_numpy(),
              "nsys GPU projection": table["nsys_forward_gpu_ms"].to_numpy()}
    if "python_forward_ms" in table:
        series["Python timer"] = table["python_forward_ms"].fillna(0).to_numpy()
    figure, ax = _per_trace_bars(table, series)
    ax.set_xlabel("ms per forward pass")
    ax.set_title("Forward pass: nsys against the Python timer")
    return figure


def nsys_b(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    series = {"forward": table["top_forward_share"].to_numpy() * 100}
    if "top_forward_backward_share" in table:
        series["forward + backward"] = table["top_forward_backward_share"].fillna(0).to_numpy() * 100
    figure, ax = _per_trace_bars(table, series)
    ax.set_xlabel("leading kernel's share of kernel time (%)")
    ax.set_title("How much the leading kernel takes")
    return figure


def _stacked(ax, labels: list[str], shares: pd.DataFrame, scale: float = 1.0, horizontal: bool = True) -> None:
    """Stacked bars, one per label, one segment per category column (in CATEGORIES order)."""
    start = np.zeros(len(labels))
    for category in [c for c in CATEGORIES if c in shares] + [c for c in shares if c not in CATEGORIES]:
        values = shares[category].fillna(0).to_numpy() * scale
        draw = ax.barh if horizontal else ax.bar
        draw(labels, values, **({"left": start} if horizontal else {"bottom": start}), label=category,
             color=CATEGORY_COLORS.get(category))
        start = start + values
    ax.legend(frameon=False, fontsize=7, ncols=2, loc="best")


def nsys_c(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    shares = table[[c for c in table if c.endswith("_share") and c != "non_gemm_share"]]
    shares.columns = [c.removesuffix("_share") for c in shares.columns]
    figure, (ax,) = new_figure(height=0.4 * len(table) + 1.4)
    _stacked(ax, _trace_labels(table), shares, scale=100)
    ax.invert_yaxis()
    ax.set_xlabel("share of forward kernel time (%)")
    ax.set_title("Non-matmul kernels in the forward pass, by category")
    return figure


def nsys_d(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    series = {"forward": table["gemm_share_forward"].to_numpy() * 100}
    if "gemm_share_train_step" in table:
        series["training step"] = table["gemm_share_train_step"].fillna(0).to_numpy() * 100
    figure, ax = _per_trace_bars(table, series)
    ax.set_xlabel("matmul share of kernel time (%)")
    ax.set_xlim(0, 100)
    ax.set_title("Matrix multiplication: inference against training")
    return figure


def nsys_e(answer: ResultsAnswer) -> Figure:
    table = _first(answer)
    series = {"time (softmax / matmuls)": table["runtime_ratio"].to_numpy()}
    if "flops_ratio" in table:
        series["FLOPs (softmax / matmuls)"] = table["flops_ratio"].fillna(0).to_numpy()
    figure, ax = _per_trace_bars(table, series)
    _plain_log(ax.xaxis, ax.set_xscale)
    ax.set_xlabel("ratio (log scale)")
    ax.set_title("Softmax against the attention matmuls")
    return figure


QUESTION_FIGURES = {
    "bench-b": bench_b, "bench-c": bench_c, "mp-accum": mp_accum, "mp-a": mp_a, "mp-c": mp_c,
    "mem-a": mem_a, "mem-b": mem_b, "mem-c": mem_c, "mem-d": mem_d, "mem-e": mem_e,
    "attn-a": attn_a, "compile-a": compile_a, "compile-b": compile_b,
    "nsys-a": nsys_a, "nsys-b": nsys_b, "nsys-c": nsys_c, "nsys-d": nsys_d, "nsys-e": nsys_e,
}


# --------------------------------------------------------------------------- trace and diff pages
def phase_categories(phases: dict[str, dict]) -> Figure:
    """Stacked bars: kernel ms per pass of each phase, by category."""
    names = [p for p in PHASE_ORDER if p in phases] + [p for p in phases if p not in PHASE_ORDER]
    shares = pd.DataFrame([phases[p]["by_category_ms_per_pass"] for p in names], index=names)
    figure, (ax,) = new_figure(height=0.5 * len(names) + 1.4)
    _stacked(ax, names, shares)
    ax.invert_yaxis()
    ax.set_xlabel("kernel time per pass (ms)")
    ax.set_title("Kernel time by category, per phase")
    return figure


def phase_spans(phases: dict[str, dict]) -> Figure:
    """Grouped bars per phase: Python timer, CPU span, GPU projection, GPU busy and summed kernel time."""
    names = [p for p in PHASE_ORDER if p in phases] + [p for p in phases if p not in PHASE_ORDER]
    views = {"Python timer": "python_ms_per_pass", "CPU span": "cpu_span_ms_per_pass",
             "GPU projection": "gpu_span_ms_per_pass", "GPU busy": "busy_ms_per_pass",
             "summed kernels": "kernel_ms_per_pass"}
    series = {label: np.array([phases[p].get(key) or 0.0 for p in names], dtype=float) for label, key in views.items()}
    figure, (ax,) = new_figure()
    _grouped_bars(ax, names, series)
    ax.set_ylabel("ms per pass")
    ax.set_title("Where each phase's time goes: CPU, GPU projection, busy GPU")
    return figure


def category_diff(categories: pd.DataFrame, label_a: str, label_b: str) -> Figure:
    """Grouped horizontal bars: ms per step of each category in run A and run B."""
    figure, (ax,) = new_figure(height=0.4 * len(categories) + 1.4)
    y = np.arange(len(categories))
    ax.barh(y - 0.2, categories["a_ms_per_pass"], 0.4, label=label_a, color=PALETTE[0])
    ax.barh(y + 0.2, categories["b_ms_per_pass"], 0.4, label=label_b, color=PALETTE[2])
    ax.set_yticks(y, categories["category"])
    ax.invert_yaxis()
    ax.set_xlabel("kernel time per step (ms)")
    ax.legend(frameon=False)
    ax.set_title("Kernel time by category")
    return figure
