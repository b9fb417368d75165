"""Interval arithmetic on ``[start, end)`` arrays of ns: unions, how much of each interval a
set of other intervals covers, and the union's length and the span of each group of intervals.
Sorting makes every function O(n log n); nothing loops in Python over intervals (at most over
groups).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from analysis.core.codes import run_starts

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


def covered_by_pieces(pieces: Iterable[tuple[np.ndarray, np.ndarray]], starts: np.ndarray, ends: np.ndarray
                      ) -> np.ndarray:
    """:func:`covered_ns` of the intervals ``[starts[i], ends[i])`` by cover intervals given
    piece by piece (``(starts, ends)`` pairs, the pieces' starts ascending, each piece after the
    ones before it): each merged interval of the cover's union adds its overlap with the
    intervals once it is closed, so no more than one piece of the cover is held. Whole ns in
    int64: the same sums in any order."""
    import numpy as np

    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    covered = np.zeros(len(starts), dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    sorted_starts, reach = starts[order], np.maximum.accumulate(ends[order]) if len(starts) else ends

    def add(merged_starts: np.ndarray, merged_ends: np.ndarray) -> None:
        """Add the overlap of the merged intervals (sorted, disjoint) with every interval that
        can reach them: those starting before the last one ends, from the first whose reach
        passes the first one's start."""
        if not len(merged_starts) or not len(starts):
            return
        low = np.searchsorted(reach, merged_starts[0], side="right")
        rows = order[low:np.searchsorted(sorted_starts, merged_ends[-1], side="left")]
        lengths = merged_ends - merged_starts
        before = np.concatenate(([0], np.cumsum(lengths)))
        covered[rows] += np.maximum(_covered_before(merged_starts, lengths, before, ends[rows])
                                    - _covered_before(merged_starts, lengths, before, starts[rows]), 0)

    open_start = open_reach = None  # the merged interval the next piece may extend
    for piece_starts, piece_ends in pieces:
        if not len(piece_starts):
            continue
        piece_reach = np.maximum.accumulate(np.asarray(piece_ends, dtype=np.int64))
        if open_reach is not None:
            np.maximum(piece_reach, open_reach, out=piece_reach)
        begins = np.empty(len(piece_starts), dtype=bool)
        begins[0] = open_reach is None or piece_starts[0] > open_reach
        begins[1:] = piece_starts[1:] > piece_reach[:-1]
        first = np.flatnonzero(begins)
        if not len(first):  # the piece only extends the open interval
            open_reach = int(piece_reach[-1])
            continue
        if open_reach is not None:  # closed by the piece's first new interval
            add(np.array([open_start], dtype=np.int64),
                np.array([piece_reach[first[0] - 1] if first[0] else open_reach], dtype=np.int64))
        last = np.append(first[1:], len(piece_starts)) - 1
        add(np.asarray(piece_starts[first[:-1]], dtype=np.int64), piece_reach[last[:-1]])
        open_start, open_reach = int(piece_starts[first[-1]]), int(piece_reach[-1])
    if open_reach is not None:
        add(np.array([open_start], dtype=np.int64), np.array([open_reach], dtype=np.int64))
    return covered


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
    return np.maximum(_covered_before(merged_starts, lengths, before, ends)
                      - _covered_before(merged_starts, lengths, before, starts), 0)


def _covered_before(merged_starts: np.ndarray, lengths: np.ndarray, before: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Cover length in (-inf, t) of the disjoint sorted intervals ``merged_starts`` (their
    ``lengths``, and ``before``: the summed length of those before each)."""
    import numpy as np

    k = np.searchsorted(merged_starts, t, side="right") - 1
    inside = np.clip(t - merged_starts[np.maximum(k, 0)], 0, lengths[np.maximum(k, 0)])
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)


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
    first = run_starts(group)
    for lo, hi in zip(first, np.r_[first[1:], len(order)]):
        reach = np.maximum.accumulate(ends_sorted[lo:hi])
        nested[order[lo + 1:hi]] = ends_sorted[lo + 1:hi] <= reach[:-1]
    return nested


def union_length_per_group(group: np.ndarray, starts: np.ndarray, ends: np.ndarray, groups: int, *,
                           scratch: bool = False, reach: np.ndarray | None = None) -> np.ndarray:
    """Length of the union of the ``[start, end)`` intervals per group number (``group``: 0 ..
    ``groups`` - 1 per interval), as int64.

    Within each group, in order of start, each interval adds what it reaches beyond its own start
    and beyond the latest end of the group's intervals before it: summed, a busy segment's first
    start to the latest end reached at its last interval. On arrays of the trace's length, few of
    them at once: intervals already in order of group and start (the labelled ops, grouped by
    anything that follows time, such as their phase range) are neither sorted nor copied again.
    With ``scratch`` (the caller's own copies, read no more) ``starts`` and ``ends`` are
    overwritten with the sums' terms instead of two more arrays of their length.

    ``reach`` (int64 per group, the int64 minimum for a group without intervals yet) folds the
    union over batches of intervals, each batch starting no earlier than the intervals of the
    batches before it (the labelled ops, which are in order of start, taken in chunks of rows):
    it holds the latest end of each group's earlier intervals, what a batch adds is counted
    beyond it, and it is updated in place. The batches' lengths add up to the whole union's."""
    import numpy as np

    busy = np.zeros(groups, dtype=np.int64)
    if not len(group):
        return busy
    order = _group_start_order(group, starts)
    own = scratch or order is not None  # whether starts and ends may be written to
    if order is not None:
        group, starts, ends = group[order], starts[order], ends[order]
        del order
    # The latest end reached so far within each group, then what each interval adds.
    reached = ends if own and ends.dtype == np.int64 else ends.astype(np.int64)
    added = starts if own and starts.dtype == np.int64 else starts.astype(np.int64)
    group_first = run_starts(group)
    first_group = group[group_first]
    first_starts = added[group_first]
    if reach is not None:  # the earlier batches' reach counts as an interval before each group's first
        reached[group_first] = np.maximum(reached[group_first], reach[first_group])
        first_starts = np.maximum(first_starts, reach[first_group])
    _running_max_per_group(reached, group_first)
    np.maximum(added[1:], reached[:-1], out=added[1:])  # the later of each start and the reach before it
    added[group_first] = first_starts  # a group's first interval adds from its own start (or the reach before)
    if reach is not None:
        reach[first_group] = reached[np.r_[group_first[1:], len(reached)] - 1]
    np.subtract(reached, added, out=added)
    busy[first_group] = np.add.reduceat(added, group_first)
    return busy


def _running_max_per_group(values: np.ndarray, group_first: np.ndarray) -> None:
    """Make each of ``values`` (in place) the greatest of its group's values up to it; the groups
    are runs beginning at ``group_first`` (0 first). One running maximum over all the values serves
    every group whose first value is no less than the values of the groups before it (there, the
    earlier values change nothing); the other groups are done again alone, from copies kept."""
    import numpy as np

    stops = np.r_[group_first[1:], len(values)]
    before = np.maximum.accumulate(np.maximum.reduceat(values, group_first))[:-1]  # per later group: the most before it
    overshot = np.flatnonzero(before > values[group_first[1:]]) + 1
    own = [values[group_first[g]:stops[g]].copy() for g in overshot]
    np.maximum.accumulate(values, out=values)
    for g, group_values in zip(overshot, own):
        values[group_first[g]:stops[g]] = np.maximum.accumulate(group_values)


def _group_start_order(group: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """Positions that put intervals in order of group, then start (ties as given); None when
    they are in that order already."""
    import numpy as np

    in_start_order = bool((starts[1:] >= starts[:-1]).all())
    if in_start_order and bool((group[1:] >= group[:-1]).all()):
        return None
    return np.argsort(group, kind="stable") if in_start_order else np.lexsort((starts, group))


def span_per_group(group: np.ndarray, starts: np.ndarray, ends: np.ndarray, groups: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Earliest start and latest end per group number (``group``: 0 .. ``groups`` - 1 per
    interval); both 0 for a group without intervals, so its span is 0. Each run of consecutive
    intervals of one group is reduced first (the labelled ops of one phase range or step come
    together), then the runs of each group."""
    import numpy as np

    first = np.full(groups, np.iinfo(np.int64).max)
    last = np.full(groups, np.iinfo(np.int64).min)
    if not len(group):
        return np.zeros(groups, dtype=np.int64), np.zeros(groups, dtype=np.int64)
    run_first = run_starts(group)
    run_group = group[run_first]
    np.minimum.at(first, run_group, np.minimum.reduceat(starts, run_first))
    np.maximum.at(last, run_group, np.maximum.reduceat(ends, run_first))
    empty = np.bincount(run_group, minlength=groups) == 0
    first[empty], last[empty] = 0, 0
    return first, last
