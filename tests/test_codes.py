"""Integer codes of columns (analysis.core.codes), against the values they stand for."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.core.codes import code_positions, run_starts, value_codes


@pytest.mark.parametrize("column", [
    pd.Series(pd.Categorical(["b", None, "a", "b"], categories=["a", "b", "unused"])),
    pd.Series(["b", None, "a", "b"], dtype=object),
], ids=["categorical", "object"])
def test_value_codes_number_the_values_and_mark_missing_ones(column):
    codes, values = value_codes(column)
    assert [None if code < 0 else values[code] for code in codes] == ["b", None, "a", "b"]


def test_code_positions_look_codes_up_in_a_known_tuple():
    values = pd.Index(["backward", "mystery", "forward"])
    codes = np.array([0, 1, 2, -1, 0])
    positions = code_positions(values, ("forward", "backward"), 9)[codes]
    assert positions.tolist() == [1, 9, 0, 9, 1]


def test_run_starts_are_where_values_change():
    assert run_starts(np.array([3, 3, 1, 1, 1, 3, 2])).tolist() == [0, 2, 5, 6]
    assert run_starts(np.array([5])).tolist() == [0]
    assert run_starts(np.array([], dtype=np.int64)).tolist() == [0]
