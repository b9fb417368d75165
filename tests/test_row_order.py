"""load.tables.sorted_by against the order a sort gives, on random rows with many ties."""
from __future__ import annotations

import numpy as np

from analysis.load.tables import sorted_by


def test_sorted_by_is_whether_a_sort_by_first_then_then_leaves_the_rows_as_they_are():
    rng = np.random.default_rng(3)
    for trial in range(400):
        count = int(rng.choice([0, 1, 2, 3, 10, 60]))
        first = rng.integers(0, 3, count).astype(np.int32)
        then = rng.integers(0, 4, count)
        if trial % 2:  # sorted, sometimes with one pair of neighbours swapped
            order = np.lexsort((then, first))
            first, then = first[order], then[order]
            if count > 1 and trial % 4 == 3:
                swap = int(rng.integers(0, count - 1))
                first[[swap, swap + 1]], then[[swap, swap + 1]] = first[[swap + 1, swap]], then[[swap + 1, swap]]
        pairs = list(zip(first.tolist(), then.tolist()))
        assert sorted_by(first, then) == (pairs == sorted(pairs))
