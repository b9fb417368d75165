"""matplotlib (Agg) set up for the report's figures that are not plain bars, and the helpers they
share: :func:`new_figure`, the legend under the plot, log axes. The bar charts are written as SVG
directly by :mod:`analysis.report.bar_figures`; the colours are :mod:`analysis.report.svg`'s, so a
category has one colour in every figure. :func:`save` writes a figure and closes it.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.report.drawing import RASTER_DPI, WIDTH_IN  # noqa: E402
from analysis.report.svg import CATEGORY_COLORS, PALETTE  # noqa: E402,F401  (CATEGORY_COLORS: for the timelines)
from analysis.safe_write import atomic_file  # noqa: E402

HEIGHT_IN = 3.4
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
