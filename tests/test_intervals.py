"""Interval arithmetic: exact cases and a brute-force check on random intervals."""
import numpy as np

from analysis.core.intervals import covered_ns, uncovered_ns, union


def test_union_merges_overlapping_and_touching_intervals():
    starts, ends = union(np.array([8, 0, 2, 20, 12]), np.array([12, 5, 4, 25, 15]))
    assert starts.tolist() == [0, 8, 20] and ends.tolist() == [5, 15, 25]


def test_communication_covered_by_two_compute_kernels():
    # comm [0, 10) with compute [2, 5) and [8, 12): 5 ns exposed, 5 ns overlapped
    assert uncovered_ns([0], [10], [2, 8], [5, 12]).tolist() == [5]
    assert covered_ns([0], [10], [2, 8], [5, 12]).tolist() == [5]


def test_no_cover_and_nested_cover():
    assert uncovered_ns([3, 0], [7, 4], [], []).tolist() == [4, 4]
    # a cover interval inside another counts once; an interval inside a cover is all covered
    assert covered_ns([0, 3], [10, 4], [1, 2], [9, 5]).tolist() == [8, 1]


def test_matches_brute_force_on_random_intervals():
    rng = np.random.default_rng(7)
    cover_starts = rng.integers(0, 1000, 200)
    cover_ends = cover_starts + rng.integers(0, 40, 200)
    starts = rng.integers(0, 1000, 100)
    ends = starts + rng.integers(0, 80, 100)
    grid = np.zeros(1200, dtype=bool)
    for s, e in zip(cover_starts, cover_ends):
        grid[s:e] = True
    expected = [int(grid[s:e].sum()) for s, e in zip(starts, ends)]
    assert covered_ns(starts, ends, cover_starts, cover_ends).tolist() == expected
