"""Integer codes of columns (analysis.core.codes), against the values they stand for."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.core import codes
from analysis.core.codes import code_positions, id_positions, lookup, per_name, run_starts, run_sums, value_codes


@pytest.mark.parametrize("column", [
    pd.Series(pd.Categorical(["b", None, "a", "b"], categories=["a", "b", "unused"])),
    pd.Series(["b", None, "a", "b"], dtype=object),
], ids=["categorical", "object"])
def test_value_codes_number_the_values_and_mark_missing_ones(column):
    codes, values = value_codes(column)
    assert [None if code < 0 else values[code] for code in codes] == ["b", None, "a", "b"]


@pytest.mark.parametrize("column", [
    pd.Series(["layer_1", "", "layer_", "lay", "x_layer_2", None, "layer_1"], dtype="str"),
    pd.Series(["layer_1", "", "layer_", "lay", "x_layer_2", None, "layer_1"], dtype=object),
    pd.Series(pd.Categorical(["layer_1", "", "layer_", "lay", "x_layer_2", None, "layer_1"],
                             categories=["layer_9", "layer_1", "", "layer_", "lay", "x_layer_2"])),
    pd.Series([], dtype="str"),
], ids=["str", "object", "categorical", "empty"])
def test_per_name_is_each_rule_row_by_row_with_missing_names_as_nan(column):
    def starts(name):
        return isinstance(name, str) and name.startswith("layer_")

    expected = [starts(name) for name in column]
    assert per_name(column, starts, dtype=bool).tolist() == expected
    assert per_name(column, starts, dtype=bool).dtype == bool
    lengths, missing = per_name(column, lambda name: len(name) if isinstance(name, str) else -1,
                                lambda name: name != name, dtype=object)  # NaN is not itself
    assert lengths.tolist() == [len(name) if isinstance(name, str) else -1 for name in column]
    assert missing.tolist() == [not isinstance(name, str) for name in column]


def test_code_positions_look_codes_up_in_a_known_tuple():
    values = pd.Index(["backward", "mystery", "forward"])
    codes = np.array([0, 1, 2, -1, 0])
    positions = code_positions(values, ("forward", "backward"), 9)[codes]
    assert positions.tolist() == [1, 9, 0, 9, 1]


def test_run_starts_are_where_values_change():
    assert run_starts(np.array([3, 3, 1, 1, 1, 3, 2])).tolist() == [0, 2, 5, 6]
    assert run_starts(np.array([5])).tolist() == [0]
    assert run_starts(np.array([], dtype=np.int64)).tolist() == [0]


@pytest.mark.parametrize("seed", range(5))
def test_id_positions_are_the_index_lookup_of_the_ids(seed):
    """Ids present, absent, past every one of ``among`` and -1 (none); shuffled ``among``."""
    rng = np.random.default_rng(seed)
    among = rng.permutation(rng.choice(60, size=rng.integers(0, 30), replace=False))
    ids = rng.integers(-1, 80, size=500).astype(np.int32)
    expected = pd.Index(among).get_indexer(ids)
    assert id_positions(ids, among).tolist() == expected.tolist()


def test_id_positions_of_no_ids_or_among_none():
    assert id_positions(np.zeros(0, dtype=np.int64), np.array([3, 1])).tolist() == []
    assert id_positions(np.array([-1, 0, 2]), np.zeros(0, dtype=np.int64)).tolist() == [-1, -1, -1]


@pytest.mark.parametrize("rows", [1, 3, 1 << 16])
def test_lookup_is_the_table_at_each_position_in_slices_of_any_length(monkeypatch, rows):
    """Narrow and wide positions, -1 for the last entry, tables of several dtypes, no positions."""
    monkeypatch.setattr(codes, "LOOKUP_ROWS", rows)
    rng = np.random.default_rng(rows)
    for table in (np.array([True, False, True]), np.array([5, -1, 7, 2], dtype=np.int8), rng.integers(0, 1 << 40, 9)):
        for dtype in (np.int8, np.int32, np.int64):
            for count in (0, 1, 7, 100):
                positions = rng.integers(-1, len(table), count).astype(dtype)
                found = lookup(table, positions)
                assert found.dtype == table.dtype and found.tolist() == [table[p].item() for p in positions]


@pytest.mark.parametrize("rows", [1, 2, 3, 1 << 18])
def test_run_sums_are_int64_sums_per_run_in_slices_of_any_length(monkeypatch, rows):
    """32-bit values whose runs sum past 32 bits, runs of one row, no rows; with a mask, only the
    rows it marks count."""
    monkeypatch.setattr(codes, "RUN_SUM_ROWS", rows)
    rng = np.random.default_rng(rows)
    for count in (0, 1, 9, 200):
        values = rng.integers(0, np.iinfo(np.int32).max, count, dtype=np.int32)
        first = np.unique(np.r_[0, rng.integers(0, count, 4)]) if count else np.zeros(0, dtype=np.int64)
        where = rng.random(count) < 0.5
        bounds = list(zip(first, [*first[1:], count]))
        sums = run_sums(values, first)
        assert sums.dtype == np.int64 and sums.tolist() == [int(values[a:b].astype(np.int64).sum()) for a, b in bounds]
        assert run_sums(values, first, where).tolist() == \
            [int(values[a:b].astype(np.int64)[where[a:b]].sum()) for a, b in bounds]


def test_counted_rows_are_the_distinct_rows_with_their_counts_read_a_slice_at_a_time(monkeypatch):
    rng = np.random.default_rng(3)
    pid = rng.choice([7, 9, 1 << 40], 1_000)
    tid = rng.integers(-1, 4, 1_000).astype(np.int32)
    device = rng.integers(0, 3, 1_000).astype(np.int8)
    where = rng.random(1_000) < 0.7
    expected = pd.DataFrame({"pid": pid, "tid": tid, "device": device})[where].value_counts().sort_index()
    monkeypatch.setattr(codes, "RUN_SUM_ROWS", 64)  # 16 slices, one row of a combination in several
    found, counts = codes.counted_rows([pid, tid, device], where)
    assert found.dtype == np.int64 and [tuple(row) for row in found.tolist()] == list(expected.index)
    assert counts.tolist() == expected.tolist()
    assert codes.counted_rows([pid, tid], np.zeros(1_000, dtype=bool))[0].shape == (0, 2)
    assert codes.counted_rows([pid[:0]])[1].tolist() == []
