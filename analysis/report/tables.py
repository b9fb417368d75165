"""Analysis tables → display tables: headers and cells as text, units read off the column names.

Analysis tables keep raw numbers with the unit in the column name (``forward_ms_mean``,
``peak_memory_bytes``, ``share``); this module is the one place that converts them. A pair
``X_mean`` / ``X_std`` becomes one ``mean ± std`` column. A missing value in a row whose
``status`` is not ``ok`` shows that status (``OOM``); any other missing value shows an en dash,
so no cell is ever blank, ``nan`` or ``None``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from cs336_profile.contract import MIB, STATUS_COLUMN, STATUS_OK

MISSING = "–"
# Text cells up to this many characters stay on one line: "forward-backward" broke at its hyphen and a
# run label ("small ctx128 train fp32 compiled") into a word per line on a phone.
SHORT_TEXT = 40


@dataclass(frozen=True)
class DisplayTable:
    """A table ready for a template: ``columns`` headers, ``rows`` of text cells."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    numeric: list[bool]  # per column: right-align
    short: list[bool]  # per column: text short enough to keep on one line (a size, a mode, a status)


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _ms(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}" if abs(value) < 0.1 else f"{value:.2f}"


# (suffix of the column name, unit shown in the header, cell formatter); first match wins.
UNITS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("_ms_per_pass", "ms per pass", _ms),
    ("_ms", "ms", _ms),
    ("_bytes", "MiB", lambda v: f"{v / MIB:,.1f}"),
    ("_mib", "MiB", lambda v: f"{v:,.2f}"),
    ("_share", "%", lambda v: f"{v * 100:.1f}"),
    ("_pct", "%", lambda v: f"{v:.1f}"),
    ("_ratio", "×", lambda v: f"{v:.4g}"),
    ("_speedup", "×", lambda v: f"{v:.2f}"),
    ("_tflop_per_s", "TFLOP/s", lambda v: f"{v:.1f}"),
    ("_per_pass", "per pass", _number),
)
# Names that are a unit alone (the kernel tables' ``share``, compile-b's ``speedup``): label, and the
# suffix whose unit and format they take.
BARE_UNITS = {"share": ("share", "_share"), "ratio": ("ratio", "_ratio"), "mfu": ("MFU", "_share"),
              "speedup": ("speedup", "_speedup")}
UNIT_BY_SUFFIX = {suffix: (unit, formatter) for suffix, unit, formatter in UNITS}


def _unit(column: str) -> tuple[str, str, Callable[[float], str]]:
    """(label, unit, formatter) of a column from its name."""
    if column.startswith("share_") or "_share_" in column:  # gemm_share_forward: a share too
        return (column.replace("_", " "), *UNIT_BY_SUFFIX["_share"])
    if column in BARE_UNITS:
        label, suffix = BARE_UNITS[column]
        return (label, *UNIT_BY_SUFFIX[suffix])
    for suffix, unit, formatter in UNITS:
        if column.endswith(suffix):
            # "forward (×)" would read as any ratio: a speedup keeps its name in the header.
            stem = column if suffix == "_speedup" else column[: -len(suffix)]
            return stem.replace("_", " "), unit, formatter
    return column.replace("_", " "), "", _number


def _split_statistic(column: str) -> tuple[str, str]:
    """``forward_ms_mean`` → (``forward_ms``, ``mean``); other names keep an empty statistic."""
    for statistic in ("mean", "std"):
        if column.endswith(f"_{statistic}"):
            return column[: -len(statistic) - 1], statistic
    return column, ""


def header(column: str, with_std: bool = False) -> str:
    """``forward_ms_mean`` → ``forward mean (ms)``; ``peak_memory_bytes`` → ``peak memory (MiB)``."""
    base, statistic = _split_statistic(column)
    label, unit, _ = _unit(base)
    if statistic:
        label += " mean ± std" if with_std else f" {statistic}"
    return f"{label} ({unit})" if unit else label


def cell(value, column: str, status: str | None = None) -> str:
    """One value as text, by its column's unit; a missing value shows the row's status or a dash."""
    if _missing(value):
        return status if isinstance(status, str) and status != STATUS_OK else MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return _unit(_split_statistic(column)[0])[2](float(value))
    return str(value)


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def display_table(title: str, frame: pd.DataFrame) -> DisplayTable:
    """Format every cell of ``frame``; ``X_mean``/``X_std`` pairs merge into ``mean ± std``."""
    statuses = frame[STATUS_COLUMN] if STATUS_COLUMN in frame else pd.Series(None, index=frame.index)
    columns, numeric, cells = [], [], []
    for column in frame.columns:
        if column.endswith("_std") and f"{column[:-4]}_mean" in frame:
            continue
        values = frame[column].astype(object)
        text = [cell(v, column, s) for v, s in zip(values, statuses)]
        std_column = f"{column[:-5]}_std" if column.endswith("_mean") else None
        with_std = std_column in frame
        if with_std:
            text = [t if _missing(s) else f"{t} ± {cell(s, column)}" for t, s in zip(text, frame[std_column])]
        columns.append(header(column, with_std))
        numeric.append(_is_numeric(frame[column]))
        cells.append(text)
    rows = [list(row) for row in zip(*cells)] if cells else []
    short = [not is_numeric and all(len(text) <= SHORT_TEXT for text in column_cells)
             for is_numeric, column_cells in zip(numeric, cells)]
    return DisplayTable(title, columns, rows, numeric, short)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
