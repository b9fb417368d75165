"""Robustness, results files (issue 20, group 5): no impossible number reaches a page, no file blocks or nests the reader to death."""
from __future__ import annotations

import math

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_app import GROUP_RESULTS


@pytest.mark.parametrize("case", params(GROUP_RESULTS))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)


@pytest.mark.parametrize(("name", "value", "why"), [
    ("step_ms_mean", math.nan, "not a finite number"), ("forward_ms", -math.inf, "not a finite number"),
    ("peak_memory_bytes", 1e308, "beyond any measurement"), ("step_ms_mean", -1.0, "negative"),
    ("tokens_per_s", -3, "negative"), ("context_length", -8, "negative"),
    ("step_overhead_pct", -2.5, None), ("step_ms_mean", 0.0, None), ("result", -10.0, None),
])
def test_the_one_number_check(name, value, why):
    from analysis.core.numbers import number_problem

    problem = number_problem(name, value)
    assert (problem is None) if why is None else why in problem
