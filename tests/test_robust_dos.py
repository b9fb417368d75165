"""Robustness, group 7: crafted exports that would take unbounded memory or time, inputs that block."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_traces import GROUP_7

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_7, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)


def _stack_nesting(intervals):
    """Reference: depth and parent of properly nested (start, end) intervals sorted by (start, -end)."""
    stack, depth, parent = [], [], []
    for row, (start, end) in enumerate(intervals):
        while stack and intervals[stack[-1]][1] <= start:
            stack.pop()
        depth.append(len(stack))
        parent.append(stack[-1] if stack else -1)
        stack.append(row)
    return depth, parent


def _random_nest(rng, count):
    """Push/pop intervals of one thread: a random walk of pushes and pops."""
    intervals, open_starts, time = [], [], 0
    while len(intervals) < count:
        time += int(rng.integers(1, 5))
        if open_starts and rng.random() < 0.5:
            intervals.append((open_starts.pop(), time))
        else:
            open_starts.append(time)
    return sorted(intervals, key=lambda iv: (iv[0], -iv[1]))


def test_nesting_matches_a_stack_at_any_depth():
    import numpy as np
    import pandas as pd

    from analysis.load.nvtx import _nesting

    rng = np.random.default_rng(7)
    for count in (1, 50, 2000):
        intervals = _random_nest(rng, count) + [(10**9 + i, 2 * 10**9 - i) for i in range(300)]  # 300 deep
        ranges = pd.DataFrame({"start_ns": [s for s, _ in intervals], "end_ns": [e for _, e in intervals],
                               "kind": "push_pop", "pid": 1, "tid": 1})
        depth, parent = _nesting(ranges)
        expected_depth, expected_parent = _stack_nesting(intervals)
        assert depth.tolist() == expected_depth and parent.tolist() == expected_parent


def test_nearest_named_ancestor_by_pointer_jumping():
    import numpy as np

    from analysis.core.phases import _nearest_named

    def walk(named, parent):
        found = []
        for row in range(len(named)):
            while row >= 0 and not named[row]:
                row = parent[row]
            found.append(row)
        return found

    rng = np.random.default_rng(3)
    for count in (1, 7, 500):
        parent = np.array([-1] + [int(rng.integers(-1, i)) for i in range(1, count)])
        named = rng.random(count) < 0.2
        assert _nearest_named(named, parent).tolist() == walk(named, parent)
    chain = np.arange(-1, 4999)
    assert (_nearest_named(np.arange(5000) == 0, chain) == 0).all()
