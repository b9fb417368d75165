"""Analysis tables → display tables: headers and cells as text, units read off the column names.

Analysis tables keep raw numbers with the unit in the column name (``forward_ms_mean``,
``peak_memory_bytes``, ``share``); this module is the one place that converts them. What a table's
author decides through column names (docs/architecture.md, "The render layer"):

- **Units in the name**: the header shows the unit once (``forward (ms)``), the cells numbers only.
  A pair ``X_mean`` / ``X_std`` becomes one ``mean ± std`` column, both with the same decimals.
- **Short label + full name**: a column ``X_full`` beside a column ``X`` holds the full text of
  ``X``'s cells (``kernel`` = ``analysis.core.kernel_names.kernel_label`` of the demangled name,
  ``kernel_full`` = the demangled name). The page shows ``X`` with ``X_full`` on hover;
  ``X_full`` is never a column of its own.
- **Numbers before names**: a column with a full-name partner, or whose text runs longer than a
  short label (``SHORT_TEXT``), is shown after the other columns, so the numbers stay in view.
- **One format per column**: every cell of a numeric column has the same decimals, chosen from the
  column's values (``column_decimals``), with thousands separators.

A missing value in a row whose ``status`` is not ``ok`` shows that status (``OOM``); any other
missing value shows an en dash, so no cell is ever blank, ``nan`` or ``None``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from cs336_profile.contract import MIB, STATUS_COLUMN, STATUS_OK

MISSING = "–"
MINUS = "−"
FULL_SUFFIX = "_full"
# Text cells up to this many characters stay on one line: "forward-backward" broke at its hyphen and a
# run label ("small ctx128 train fp32 compiled") into a word per line on a phone. Longer text (a
# kernel's name) wraps, and its column comes after the numbers.
SHORT_TEXT = 40
SIGNIFICANT = 3  # figures of a column's largest value
MIN_SIGNIFICANT = 2  # figures of its smallest non-zero value, within EXTRA_DECIMALS more decimals
EXTRA_DECIMALS = 2
# From this many columns a table is set dense (smaller type, short text may wrap at spaces) so that
# it still fits a laptop's column: nsys-b shows 13.
DENSE_COLUMNS = 11
MAX_DECIMALS = 3  # 0.0001 ms beside 11 ms reads <0.001, not 11.3330
# More columns than this do not fit a laptop's column even dense (compile-b's 20 made a 1,730 px
# table in a 1,110 px box): such a table is shown as several, each repeating the row's key columns.
MAX_COLUMNS = 12
MAX_KEY_COLUMNS = 4  # the leading columns that name a row (trace, size, context, mode), repeated in each part
# Numeric columns that name a row rather than measure it.
KEY_NUMBERS = ("context_length", "rank", "block", "batch_size")


@dataclass(frozen=True)
class Unit:
    """How a column's numbers show: ``label`` in the header, ``value × scale`` in the cells, with
    ``decimals`` fixed or (None) chosen from the column's values (``column_decimals``)."""

    label: str
    scale: float = 1.0
    decimals: int | None = None


# (suffix of the column name, its unit); first match wins.
UNITS: tuple[tuple[str, Unit], ...] = (
    ("_ms_per_pass", Unit("ms per pass")),
    ("_ms", Unit("ms")),
    ("_bytes", Unit("MiB", scale=1 / MIB)),
    ("_mib", Unit("MiB")),
    ("_share", Unit("%", scale=100, decimals=1)),
    ("_pct", Unit("%", decimals=1)),
    ("_ratio", Unit("×")),
    ("_speedup", Unit("×")),
    ("_tflop_per_s", Unit("TFLOP/s")),
    ("_per_pass", Unit("per pass")),
)
NO_UNIT = Unit("")
# Names that are a unit alone (the kernel tables' ``share``, compile-b's ``speedup``): label, and the
# suffix whose unit they take.
BARE_UNITS = {"share": ("share", "_share"), "ms_per_pass": ("time", "_ms_per_pass"), "ratio": ("ratio", "_ratio"), "mfu": ("MFU", "_share"),
              "speedup": ("speedup", "_speedup")}
UNIT_BY_SUFFIX = dict(UNITS)


@dataclass(frozen=True)
class DisplayTable:
    """A table ready for a template: ``columns`` headers, ``rows`` of text cells."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    numeric: list[bool]  # per column: right-align
    short: list[bool]  # per column: text short enough to keep on one line (a size, a mode, a status)
    full: list[list[str]]  # per cell: the full text shown on hover, "" where the cell is all there is

    @property
    def dense(self) -> bool:
        """Many columns: set in smaller type, short text wrapping at spaces."""
        return len(self.columns) >= DENSE_COLUMNS


def _unit(column: str) -> tuple[str, Unit]:
    """(label, unit) of a column from its name."""
    if column.startswith("share_") or "_share_" in column:  # gemm_share_forward: a share too
        return column.replace("_", " "), UNIT_BY_SUFFIX["_share"]
    if column in BARE_UNITS:
        label, suffix = BARE_UNITS[column]
        return label, UNIT_BY_SUFFIX[suffix]
    for suffix, unit in UNITS:
        if column.endswith(suffix):
            # "forward (×)" would read as any ratio: a speedup keeps its name in the header.
            stem = column if suffix == "_speedup" else column[: -len(suffix)]
            return stem.replace("_", " "), unit
    return column.replace("_", " "), NO_UNIT


def _split_statistic(column: str) -> tuple[str, str]:
    """``forward_ms_mean`` → (``forward_ms``, ``mean``); other names keep an empty statistic."""
    for statistic in ("mean", "std"):
        if column.endswith(f"_{statistic}"):
            return column[: -len(statistic) - 1], statistic
    return column, ""


def header(column: str, with_std: bool = False) -> str:
    """``forward_ms_mean`` → ``forward mean (ms)``; ``peak_memory_bytes`` → ``peak memory (MiB)``."""
    base, statistic = _split_statistic(column)
    label, unit = _unit(base)
    if statistic:
        label += " mean ± std" if with_std else f" {statistic}"
    return f"{label} ({unit.label})" if unit.label else label


def column_decimals(values: list[float], unit: Unit) -> int:
    """Decimals for every cell of a column: the unit's fixed ones; none for whole numbers; else
    enough for ``SIGNIFICANT`` figures of the largest value, raised (by at most
    ``EXTRA_DECIMALS``) until the smallest non-zero value keeps ``MIN_SIGNIFICANT`` figures."""
    if unit.decimals is not None:
        return unit.decimals
    shown = [abs(v * unit.scale) for v in values if math.isfinite(v)]
    if all(v.is_integer() for v in shown):
        return 0
    nonzero = [v for v in shown if v > 0]
    top = SIGNIFICANT - 1 - math.floor(math.log10(max(nonzero)))
    bottom = MIN_SIGNIFICANT - 1 - math.floor(math.log10(min(nonzero)))
    return min(max(top, min(bottom, top + EXTRA_DECIMALS), 0), MAX_DECIMALS)


def number(value: float, decimals: int) -> str:
    """``1,234.5`` with ``decimals`` (``−`` for negatives); a non-zero value that would read as zero
    shows ``<0.01``."""
    text = f"{value:,.{decimals}f}"
    if value != 0 and not any(ch in "123456789" for ch in text):
        text = f"{'>-' if value < 0 else '<'}{10.0 ** -decimals:.{decimals}f}"
    return text.replace("-", MINUS)


def _numbers(values) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and not _missing(v)]


def _formatter(column: str, values: list[float]):
    """The cell formatter of a column: its unit's scale and the column's decimals."""
    unit = _unit(_split_statistic(column)[0])[1]
    decimals = column_decimals(values, unit) if values else 0
    return lambda value: number(float(value) * unit.scale, decimals)


def cell(value, formatter, status: str | None = None) -> str:
    """One value as text with its column's formatter; a missing value shows the row's status or a dash."""
    if _missing(value):
        return status if isinstance(status, str) and status != STATUS_OK else MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return formatter(value)
    return str(value)


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _shown_columns(frame: pd.DataFrame) -> list[str]:
    """The columns that get a column of their own, numbers before long names (module docstring)."""
    shown = [c for c in frame.columns
             if not (c.endswith("_std") and f"{c[:-4]}_mean" in frame)
             and not (c.endswith(FULL_SUFFIX) and c[: -len(FULL_SUFFIX)] in frame)]

    def is_name(column: str) -> bool:
        if _is_numeric(frame[column]):
            return False
        return f"{column}{FULL_SUFFIX}" in frame or any(len(str(v)) > SHORT_TEXT for v in frame[column])
    return [c for c in shown if not is_name(c)] + [c for c in shown if is_name(c)]


def display_tables(title: str, frame: pd.DataFrame) -> list[DisplayTable]:
    """``frame`` as one display table, or, with more than :data:`MAX_COLUMNS` columns to show, as
    several: each holds the row's key columns (its leading text columns and :data:`KEY_NUMBERS`,
    else its first column) and the next columns in order, with their ``_std``/``_full`` partners
    and the status."""
    shown = _shown_columns(frame)
    if len(shown) <= MAX_COLUMNS:
        return [display_table(title, frame)]
    keys = []
    for column in (c for c in frame.columns if c in shown):
        if len(keys) == MAX_KEY_COLUMNS or (_is_numeric(frame[column]) and column not in KEY_NUMBERS):
            break
        keys.append(column)
    keys = keys or shown[:1]
    rest = [c for c in shown if c not in keys]
    width = MAX_COLUMNS - len(keys)
    parts = [rest[start:start + width] for start in range(0, len(rest), width)]
    return [display_table(f"{title} ({index} of {len(parts)})", frame[_with_partners(frame, keys + part)])
            for index, part in enumerate(parts, start=1)]


def _with_partners(frame: pd.DataFrame, columns: list[str]) -> list[str]:
    """``columns`` with the columns that show inside them (``X_std`` of ``X_mean``, ``X_full`` of
    ``X``) and the status column, in the frame's order."""
    wanted = set(columns) | {STATUS_COLUMN} | {f"{c[:-5]}_std" for c in columns if c.endswith("_mean")} \
        | {f"{c}{FULL_SUFFIX}" for c in columns}
    return [c for c in frame.columns if c in wanted]


def display_table(title: str, frame: pd.DataFrame) -> DisplayTable:
    """Format every cell of ``frame`` (the conventions of the module docstring)."""
    statuses = frame[STATUS_COLUMN] if STATUS_COLUMN in frame else pd.Series(None, index=frame.index)
    columns, numeric, cells, full = [], [], [], []
    for column in _shown_columns(frame):
        values = frame[column].astype(object)
        std_column = f"{column[:-5]}_std" if column.endswith("_mean") else None
        with_std = std_column in frame
        # mean ± std: one set of decimals for both, chosen from both
        formatter = _formatter(column, _numbers(values) + (_numbers(frame[std_column].astype(object)) if with_std else []))
        text = [cell(v, formatter, s) for v, s in zip(values, statuses)]
        if with_std:
            text = [t if _missing(s) else f"{t} ± {cell(s, formatter)}" for t, s in zip(text, frame[std_column])]
        full_column = f"{column}{FULL_SUFFIX}"
        hover = [("" if _missing(f) or str(f) == t else str(f)) for f, t in zip(frame[full_column], text)] \
            if full_column in frame else [""] * len(text)
        columns.append(header(column, with_std))
        numeric.append(_is_numeric(frame[column]))
        cells.append(text)
        full.append(hover)
    rows = [list(row) for row in zip(*cells)] if cells else []
    short = [not is_numeric and all(len(text) <= SHORT_TEXT for text in column_cells)
             for is_numeric, column_cells in zip(numeric, cells)]
    full_rows = [list(row) for row in zip(*full)] if full else []
    return DisplayTable(title, columns, rows, numeric, short, full_rows)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
