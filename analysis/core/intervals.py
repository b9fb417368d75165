"""Interval arithmetic on ``[start, end)`` arrays of ns: unions and how much of each interval a
set of other intervals covers. Sorting makes every function O(n log n); nothing loops in Python
over intervals.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np



def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals as disjoint, sorted intervals (touching ones are merged)."""
    import numpy as np

    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    # A new merged interval begins where an interval starts after everything before it ended.
    begins = np.ones(len(starts), dtype=bool)
    begins[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(begins)
    last = np.append(first[1:], len(starts)) - 1
    return starts[first], reach[last]


def covered_ns(starts: np.ndarray, ends: np.ndarray, cover_starts: np.ndarray,
               cover_ends: np.ndarray) -> np.ndarray:
    """For each interval ``[starts[i], ends[i])``, how many ns of it lie inside the union of the
    cover intervals."""
    import numpy as np

    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    merged_starts, merged_ends = union(cover_starts, cover_ends)
    if not len(merged_starts) or not len(starts):
        return np.zeros(len(starts), dtype=np.int64)
    lengths = merged_ends - merged_starts
    before = np.concatenate(([0], np.cumsum(lengths)))  # cover length before merged interval k

    def covered_before(t: np.ndarray) -> np.ndarray:
        """Cover length in (-inf, t)."""
        k = np.searchsorted(merged_starts, t, side="right") - 1
        inside = np.clip(t - merged_starts[np.maximum(k, 0)], 0, lengths[np.maximum(k, 0)])
        return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)

    return np.maximum(covered_before(ends) - covered_before(starts), 0)


def uncovered_ns(starts: np.ndarray, ends: np.ndarray, cover_starts: np.ndarray,
                 cover_ends: np.ndarray) -> np.ndarray:
    """For each interval, how many ns of it no cover interval overlaps."""
    import numpy as np

    length = np.asarray(ends, dtype=np.int64) - np.asarray(starts, dtype=np.int64)
    return length - covered_ns(starts, ends, cover_starts, cover_ends)


def within_earlier(starts: np.ndarray, ends: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Whether each interval lies within one of its group that starts no later and is not itself
    within another (ties on start: the longer one holds the shorter): the nested ranges of one
    name, thread or process that hold the same work as the range around them."""
    import numpy as np

    nested = np.zeros(len(starts), dtype=bool)
    if not len(starts):
        return nested
    group = np.unique(groups, return_inverse=True)[1].reshape(-1)
    order = np.lexsort((-ends, starts, group))
    group, ends_sorted = group[order], ends[order]
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    for lo, hi in zip(first, np.r_[first[1:], len(order)]):
        reach = np.maximum.accumulate(ends_sorted[lo:hi])
        nested[order[lo + 1:hi]] = ends_sorted[lo + 1:hi] <= reach[:-1]
    return nested
