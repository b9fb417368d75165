"""Figures of the report, drawn with matplotlib (Agg) from the analysis tables and saved as SVG.

The shared drawing helpers and the figures of a trace page and a diff page; the question figures are
in :mod:`analysis.report.question_figures`. Functions draw and return the figure; :func:`save`
writes and closes it.
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
from analysis.records import ResultsAnswer  # noqa: E402
from analysis.report.drawing import RASTER_DPI, WIDTH_IN  # noqa: E402
from analysis.safe_write import atomic_file
from cs336_profile.contract import PHASES as PHASE_ORDER  # noqa: E402

HEIGHT_IN = 3.4
# Okabe & Ito's colour-blind-safe palette, in the order series take it.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
# One colour per kernel category in every figure: Okabe–Ito for the common ones, three of Tol's
# colour-blind-safe colours and greys (by lightness) for the rest.
CATEGORY_COLORS = {
    "gemm": "#0072B2", "convolution": "#882255", "attention": "#56B4E9", "softmax": "#CC79A7",
    "normalization": "#F0E442", "reduction": "#009E73", "elementwise": "#E69F00", "copy_cast": "#D55E00",
    "optimizer": "#332288", "communication": "#44AA99", "memcpy": "#555555", "memset": "#999999", "other": "#CCCCCC",
}

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: small files that scale
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    "legend.frameon": False,
})


def save(figure: Figure, path: Path, root: Path | None = None) -> Path:
    """Write the figure (format from the suffix) through the safe writer, never outside ``root``,
    and free it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_file(path, "wb", root=root) as handle:
            figure.savefig(handle, format=path.suffix[1:], bbox_inches="tight", dpi=RASTER_DPI)
    finally:
        plt.close(figure)
    return path


def new_figure(height: float = HEIGHT_IN, ncols: int = 1, width: float = WIDTH_IN) -> tuple[Figure, list]:
    figure, axes = plt.subplots(1, ncols, figsize=(width, height), squeeze=False, layout="constrained")
    return figure, list(axes[0])


def legend_below(ax, ncols: int | None = None) -> None:
    """The legend of ``ax``'s series under the plot, outside every axes: it never covers data."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if unique:
        ax.figure.legend(unique.values(), unique.keys(), loc="outside lower center",
                         ncols=ncols or min(len(unique), 4))


def completed(table: pd.DataFrame) -> pd.DataFrame:
    """Rows whose ``status`` is ok (all rows without a status column)."""
    return table[table["status"] == "ok"] if "status" in table else table


def run_labels(table: pd.DataFrame, columns=("size", "context_length", "mode")) -> list[str]:
    """``small ctx128 train`` per row, from the ``columns`` the table has."""
    present = [c for c in columns if c in table]
    return [" ".join(("ctx" if c == "context_length" else "") + str(row[c]) for c in present)
            for _, row in table.iterrows()]


def grouped_bars(ax, labels: list[str], series: dict[str, np.ndarray], errors: dict[str, np.ndarray] | None = None,
                  colors: dict[str, tuple] | None = None) -> None:
    """Bars of several series side by side for each label."""
    x = np.arange(len(labels))
    width = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series.items()):
        ax.bar(x + (index - (len(series) - 1) / 2) * width, values, width, label=name,
               yerr=None if errors is None else errors.get(name), capsize=2,
               color=None if colors is None else colors.get(name))
    ax.set_xticks(x, labels, rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    legend_below(ax)


def first_table(answer: ResultsAnswer, index: int = 0) -> pd.DataFrame:
    """The answer's ``index``-th table."""
    return list(answer.tables.values())[index]


def lengths_axis(ax, lengths: pd.Series, label: str) -> None:
    """Log-2 x axis labelled with the lengths themselves (256, 512, 1k, 16k: a side-by-side
    figure's axis has no room for 16,384)."""
    ax.set_xscale("log", base=2)
    ticks = sorted(lengths.unique())
    ax.set_xticks(ticks, [f"{int(n) // 1024}k" if n >= 1024 and n % 1024 == 0 else f"{int(n):,}" for n in ticks])
    ax.minorticks_off()
    ax.set_xlabel(label)


def plain_log_y(ax) -> None:
    """Log y axis with plain numbers (0.5, 2, 100) instead of powers of ten."""
    plain_log(ax.yaxis, ax.set_yscale)


def plain_log(axis, set_scale) -> None:
    set_scale("log")
    # Ticks at 1, 2 and 5 of each decade: a range within one decade (50–550 ms) still gets labels.
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1, 2, 5)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def stacked(ax, labels: list[str], shares: pd.DataFrame, scale: float = 1.0, horizontal: bool = True) -> None:
    """Stacked bars, one per label, one segment per category column (in CATEGORIES order)."""
    start = np.zeros(len(labels))
    for category in [c for c in CATEGORIES if c in shares] + [c for c in shares if c not in CATEGORIES]:
        values = shares[category].fillna(0).to_numpy() * scale
        draw = ax.barh if horizontal else ax.bar
        draw(labels, values, **({"left": start} if horizontal else {"bottom": start}), label=category,
             color=CATEGORY_COLORS.get(category))
        start = start + values
    legend_below(ax)


# --------------------------------------------------------------------------- trace and diff pages
def phase_categories(phases: dict[str, dict]) -> Figure:
    """Stacked bars: kernel ms per pass of each phase, by category."""
    names = [p for p in PHASE_ORDER if p in phases] + [p for p in phases if p not in PHASE_ORDER]
    shares = pd.DataFrame([phases[p]["by_category_ms_per_pass"] for p in names], index=names)
    figure, (ax,) = new_figure(height=0.5 * len(names) + 1.4)
    stacked(ax, names, shares)
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
    grouped_bars(ax, names, series)
    ax.set_ylabel("ms per pass")
    ax.set_title("Where each phase's time goes: CPU, GPU projection, busy GPU")
    return figure


def category_diff(categories: pd.DataFrame, label_a: str, label_b: str) -> Figure:
    """Grouped horizontal bars: ms per step of each category in run A and run B."""
    figure, (ax,) = new_figure(height=0.4 * len(categories) + 1.4)
    y = np.arange(len(categories))
    ax.barh(y - 0.2, categories["a_ms_per_pass"], 0.4, label=label_a, color=PALETTE[0])
    ax.barh(y + 0.2, categories["b_ms_per_pass"], 0.4, label=label_b, color=PALETTE[1])
    ax.set_yticks(y, categories["category"])
    ax.invert_yaxis()
    ax.set_xlabel("kernel time per step (ms)")
    legend_below(ax, ncols=1)  # the runs' names are long
    ax.set_title("Kernel time by category")
    return figure
