"""Interval arithmetic: exact cases and a brute-force check on random intervals."""
import numpy as np

from analysis.core.intervals import covered_by_pieces, covered_ns, span_per_group, union, union_length_per_group


def test_union_merges_overlapping_and_touching_intervals():
    starts, ends = union(np.array([8, 0, 2, 20, 12]), np.array([12, 5, 4, 25, 15]))
    assert starts.tolist() == [0, 8, 20] and ends.tolist() == [5, 15, 25]


def test_communication_covered_by_two_compute_kernels():
    # comm [0, 10) with compute [2, 5) and [8, 12): 5 ns exposed, 5 ns overlapped
    assert covered_ns([0], [10], [2, 8], [5, 12]).tolist() == [5]


def test_no_cover_and_nested_cover():
    assert covered_ns([3, 0], [7, 4], [], []).tolist() == [0, 0]
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


def test_cover_given_in_pieces_covers_what_the_whole_cover_covers():
    rng = np.random.default_rng(11)
    for _ in range(50):
        cover_starts = np.sort(rng.integers(0, 2000, 300))
        cover_ends = cover_starts + rng.integers(0, 30, 300)
        starts = rng.integers(0, 2000, 40)
        ends = starts + rng.integers(0, 400, 40)  # some span many pieces
        cuts = np.sort(rng.integers(0, 301, 5))  # pieces of any length, empty ones too
        pieces = [(cover_starts[low:high], cover_ends[low:high]) for low, high in zip([0, *cuts], [*cuts, 300])]
        assert covered_by_pieces(pieces, starts, ends).tolist() == \
            covered_ns(starts, ends, cover_starts, cover_ends).tolist()


def test_cover_given_in_pieces_of_nothing_or_for_no_interval():
    pieces = [(np.array([0, 5]), np.array([3, 9])), (np.array([8, 20]), np.array([12, 21]))]
    assert covered_by_pieces([], np.array([1]), np.array([2])).tolist() == [0]
    assert covered_by_pieces(pieces, np.array([], dtype=np.int64), np.array([], dtype=np.int64)).tolist() == []
    # [5, 9) and [8, 12) merge across the pieces into [5, 12); an interval touching it is not covered
    assert covered_by_pieces(pieces, np.array([4, 12, 2]), np.array([13, 15, 21])).tolist() == [7, 0, 9]


def sweep_union_lengths(group, starts, ends, groups):
    """Per group, in order of start (ties as given): a busy segment opens where an interval starts
    after every earlier one of the group ended and lasts to the latest end reached before the next
    opens."""
    busy = [0] * groups
    for g in range(groups):
        rows = sorted(np.flatnonzero(group == g), key=lambda row: starts[row])
        segment_start = reach = None
        for row in rows:
            if reach is None or starts[row] > reach:
                if reach is not None:
                    busy[g] += reach - segment_start
                segment_start = int(starts[row])
            reach = int(ends[row]) if reach is None else max(reach, int(ends[row]))
        if reach is not None:
            busy[g] += reach - segment_start
    return busy


def brute_spans(group, starts, ends, groups):
    first = [int(starts[group == g].min()) if (group == g).any() else 0 for g in range(groups)]
    last = [int(ends[group == g].max()) if (group == g).any() else 0 for g in range(groups)]
    return first, last


def random_grouped_intervals(rng, count, groups, in_order):
    """Intervals with tied starts, nested and touching ones, some ending before they start (what a
    damaged trace may hold); ``in_order``: sorted by group and start, as the labelled ops often are."""
    group = rng.integers(0, groups, count)
    starts = rng.integers(0, 60, count) * 5
    ends = starts + rng.integers(-3, 40, count)
    if in_order:
        order = np.lexsort((starts, group))
        group, starts, ends = group[order], starts[order], ends[order]
    return group, starts, ends


def test_grouped_union_lengths_and_spans_match_a_plain_sweep():
    rng = np.random.default_rng(11)
    for trial in range(300):
        count = int(rng.choice([0, 1, 2, 5, 40, 200]))
        groups = int(rng.integers(1, 8))
        in_order = trial % 3 == 0
        group, starts, ends = random_grouped_intervals(rng, count, groups, in_order)
        if trial % 3 == 1:  # in order of start only, as the ops of a whole trace are
            order = np.argsort(starts, kind="stable")
            group, starts, ends = group[order], starts[order], ends[order]
        busy = union_length_per_group(group, starts, ends, groups)
        assert busy.dtype == np.int64 and busy.tolist() == sweep_union_lengths(group, starts, ends, groups)
        assert union_length_per_group(group, starts.copy(), ends.copy(), groups, scratch=True).tolist() == busy.tolist()
        first, last = span_per_group(group, starts, ends, groups)
        assert (first.tolist(), last.tolist()) == brute_spans(group, starts, ends, groups)


def test_grouped_union_leaves_its_arrays_as_they_were():
    group, starts, ends = np.array([0, 0, 1]), np.array([0, 2, 1]), np.array([5, 3, 4])
    kept = group.copy(), starts.copy(), ends.copy()
    assert union_length_per_group(group, starts, ends, 3).tolist() == [5, 3, 0]
    assert all((a == b).all() for a, b in zip((group, starts, ends), kept))


def test_grouped_union_folded_over_batches_by_its_reach_is_the_whole_union():
    """Intervals in order of start cut into batches anywhere (empty ones, one interval, ties on the
    cut): the batches' lengths, each counted beyond the reach of those before, add up to the
    whole union's, and the reach ends as each group's latest end."""
    rng = np.random.default_rng(5)
    for trial in range(300):
        count = int(rng.choice([0, 1, 2, 5, 40, 200]))
        groups = int(rng.integers(1, 8))
        group, starts, ends = random_grouped_intervals(rng, count, groups, False)
        order = np.argsort(starts, kind="stable")
        group, starts, ends = group[order], starts[order], ends[order]
        expected = sweep_union_lengths(group, starts, ends, groups)
        cuts = np.sort(rng.integers(0, count + 1, int(rng.integers(0, 5))))
        reach = np.full(groups, np.iinfo(np.int64).min)
        busy = np.zeros(groups, dtype=np.int64)
        for low, high in zip(np.r_[0, cuts], np.r_[cuts, count]):
            busy += union_length_per_group(group[low:high], starts[low:high].copy(), ends[low:high].copy(), groups,
                                           scratch=bool(trial % 2), reach=reach)
        assert busy.tolist() == expected
        latest = [max((int(e) for g, e in zip(group, ends) if g == k), default=np.iinfo(np.int64).min) for k in range(groups)]
        assert reach.tolist() == latest
