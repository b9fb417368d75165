"""Integer codes of table columns: the code of each value of a column, the position of each coded
value in a known tuple, the position of each id among others, and where runs of equal consecutive
values begin.

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


def code_positions(values: Sequence, known: Sequence, other: int) -> np.ndarray:
    """For the values a column's codes number (:func:`value_codes`), each one's position in
    ``known`` (``other`` when absent), then ``other`` once more, so that code -1 (missing) takes
    it: index the result with the codes. Positions are int8: ``known`` is a short tuple."""
    import numpy as np

    return np.array([known.index(value) if value in known else other for value in values] + [other], dtype=np.int8)


def id_positions(ids: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Position of each of ``ids`` in ``among`` (distinct ids), -1 for an id not there (-1 too):
    ``pd.Index(among).get_indexer(ids)`` by a table of every id up to the largest, for ids that
    number rows (a range's ``range_id``: its row, or past the trace's rows for a window the
    analysis made), in the dtype of positions among ``among``."""
    import numpy as np

    from analysis.load.tables import position_dtype

    table = np.full(max(ids.max(initial=-1), among.max(initial=-1)) + 2, -1, dtype=position_dtype(len(among)))
    table[among] = np.arange(len(among))
    return table[ids]  # -1 takes the last entry, past every id: -1


def run_starts(values: np.ndarray) -> np.ndarray:
    """Positions where a run of equal consecutive values begins: 0 first, also for no values."""
    import numpy as np

    return np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
