"""Integer codes of table columns: the code of each value of a column, its distinct values, a rule
worked out once per distinct name, the position of each coded value in a known tuple, the position
of each id among others, the values of a table at millions of positions, where runs of equal
consecutive values begin, and the distinct rows of several columns with their counts.

numpy and pandas are imported by the functions: the interval helpers, which a run served from the
results cache imports, build on this module.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def value_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """An integer code per value of ``column`` (-1 when missing) and the values they number: a
    categorical's own codes (no copy) and categories (some may number no row), else factorized."""
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), column.cat.categories
    codes, values = pd.factorize(column)
    return codes, pd.Index(values)


def per_name(names, *rules, dtype=object) -> np.ndarray | list[np.ndarray]:
    """Each of ``rules`` of each of ``names`` (the array of the one rule, else one per rule), worked
    out once per distinct name (a trace repeats a few names many times, an NVTX range's name
    millions of times), the names told apart once; a missing name is given to the rules as NaN."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(names, dtype=object))  # a missing name: -1, the last result
    values = [*uniques, np.nan] if (codes < 0).any() else list(uniques)
    ruled = [np.array([rule(name) for name in values], dtype=dtype)[codes] for rule in rules]
    return ruled[0] if len(rules) == 1 else ruled


def distinct(values: np.ndarray) -> np.ndarray:
    """``pd.unique(values)``, without hashing millions of rows that hold one value (one process)."""
    import pandas as pd

    return values[:1] if len(values) and values.min() == values.max() else pd.unique(values)


def code_positions(values: Sequence, known: Sequence, other: int) -> np.ndarray:
    """For the values a column's codes number (:func:`value_codes`), each one's position in
    ``known`` (``other`` when absent), then ``other`` once more, so that code -1 (missing) takes
    it: index the result with the codes. Positions are int8: ``known`` is a short tuple."""
    import numpy as np

    return np.array([known.index(value) if value in known else other for value in values] + [other], dtype=np.int8)


def id_positions(ids: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Position of each of ``ids`` in ``among`` (distinct ids), -1 for an id not there (-1 too):
    ``pd.Index(among).get_indexer(ids)`` by a table of every id up to the largest (:func:`id_table`),
    for ids that number rows (a range's ``range_id``: its row, or past the trace's rows for a
    window the analysis made), in the dtype of positions among ``among``."""
    return id_table(among, ids.max(initial=-1))[ids]


def id_table(among: np.ndarray, largest: int) -> np.ndarray:
    """The table :func:`id_positions` looks ids up in, for ids up to ``largest``: entry ``i`` is
    the position of id ``i`` in ``among``, -1 where it is not there; its last entry, past every id,
    is -1, so id -1 finds -1. Made once, it serves ids a chunk at a time."""
    import numpy as np

    from analysis.load.tables import position_dtype

    table = np.full(max(largest, among.max(initial=-1)) + 2, -1, dtype=position_dtype(len(among)))
    table[among] = np.arange(len(among))
    return table


def run_starts(values: np.ndarray) -> np.ndarray:
    """Positions where a run of equal consecutive values begins: 0 first, also for no values."""
    import numpy as np

    return np.flatnonzero(np.r_[True, values[1:] != values[:-1]])


def row_starts(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Positions where a run of equal consecutive rows of ``columns`` (arrays of one length)
    begins, a row differing from the one before in some column: 0 first; none for no rows."""
    import numpy as np

    changes = np.zeros(len(columns[0]), dtype=bool)
    changes[:1] = True
    for values in columns:
        changes[1:] |= values[1:] != values[:-1]
    return np.flatnonzero(changes)


# Positions read at a time by :func:`lookup`: their 64-bit copy stays in the processor's cache.
LOOKUP_ROWS = 1 << 16


def lookup(table: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``table[positions]`` (a 1-D table; position -1 is its last entry), taken :data:`LOOKUP_ROWS`
    positions at a time: numpy widens narrow positions (the int8 to int32 codes of millions of
    ops) to 64 bits before it looks them up, and a slice's widened copy stays in the cache where
    the whole column's would be tens of MB written and read again."""
    import numpy as np

    found = np.empty(len(positions), dtype=table.dtype)
    for low in range(0, len(positions), LOOKUP_ROWS):
        np.take(table, positions[low:low + LOOKUP_ROWS], out=found[low:low + LOOKUP_ROWS])
    return found


# Rows summed at a time by :func:`run_sums`: its widened copy of the values stays a few MiB.
RUN_SUM_ROWS = 1 << 18


def run_sums(values: np.ndarray, first: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """Sum of ``values`` over each run ``first[i] .. first[i + 1] - 1`` (``first``: ascending run
    starts, 0 first; the last run ends with the values), as int64 whatever the values' integer
    width (a run of 32-bit durations may sum past 32 bits); with ``where`` (a mask), only the
    rows it marks count. ``np.add.reduceat`` with an int64 dtype, on slices of runs about
    :data:`RUN_SUM_ROWS` rows long, so the widened copy of the values it makes is a slice's, not
    a whole column's."""
    import numpy as np

    sums = np.zeros(len(first), dtype=np.int64)
    for runs, rows in _run_slices(first, len(values)):
        part = values[rows].astype(np.int64, copy=where is not None)  # a copy only to be written to
        if where is not None:
            part[~where[rows]] = 0
        sums[runs] = np.add.reduceat(part, first[runs] - first[runs.start])
    return sums


def run_maxima(first: np.ndarray, count: int, values_of) -> np.ndarray:
    """Greatest value over each run ``first[i] .. first[i + 1] - 1`` of ``count`` rows (``first`` as
    :func:`run_sums` reads it), as int64, the values made by ``values_of(rows)`` (a slice of rows)
    a slice of runs at a time: a derived column (an op's end, its start plus its duration) is never
    made whole."""
    import numpy as np

    maxima = np.zeros(len(first), dtype=np.int64)
    for runs, rows in _run_slices(first, count):
        maxima[runs] = np.maximum.reduceat(values_of(rows), first[runs] - first[runs.start])
    return maxima


def _run_slices(first, count: int):
    """Slices of runs about :data:`RUN_SUM_ROWS` rows long (each run whole), with their rows: pairs
    (runs, rows) of slices, in order."""
    import numpy as np

    low = 0  # the first run of the slice
    while low < len(first):
        high = max(int(np.searchsorted(first, first[low] + RUN_SUM_ROWS, side="left")), low + 1)
        yield slice(low, high), slice(first[low], first[high] if high < len(first) else count)
        low = high


def counted_rows(columns: Sequence[np.ndarray], where: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``columns`` (integer arrays of one length), of those ``where`` marks
    (every row without it), as an int64 array of one row each, sorted, and how many rows each
    is. Found :data:`RUN_SUM_ROWS` rows at a time, each slice's runs of equal rows counted before
    they are sorted: at millions of rows a stacked copy of the columns, or the hash table of a
    grouping, would be as large as they are."""
    import numpy as np

    parts = [_distinct_rows([np.zeros(0, dtype=np.int64)] * len(columns), np.zeros(0, dtype=np.int64))]
    for low in range(0, len(columns[0]) if columns else 0, RUN_SUM_ROWS):
        rows = slice(low, low + RUN_SUM_ROWS)
        taken = [column[rows] if where is None else column[rows][where[rows]] for column in columns]
        first = row_starts(taken)  # runs of equal consecutive rows first: a trace's rows come in runs
        parts.append(_distinct_rows([values[first].astype(np.int64) for values in taken],
                                    np.diff(np.append(first, len(taken[0])))))
    stacked = np.concatenate([part[0] for part in parts])
    return _distinct_rows(list(stacked.T), np.concatenate([part[1] for part in parts]))


def _distinct_rows(columns: list[np.ndarray], counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``columns`` (int64), sorted, and the summed ``counts`` of each: the
    rows sorted by every column (a lexsort), then cut where one changes."""
    import numpy as np

    order = np.lexsort(columns[::-1])
    columns = [values[order] for values in columns]
    first = row_starts(columns)
    distinct = np.column_stack([values[first] for values in columns]) if columns else np.zeros((len(first), 0), np.int64)
    return distinct.astype(np.int64, copy=False), np.add.reduceat(counts[order], first) if len(first) else counts[:0]
