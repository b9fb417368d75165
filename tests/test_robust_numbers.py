"""Robustness, group 5: impossible timestamps and overlapping ranges: dropped or clipped with a note."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_traces import GROUP_5

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_5, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
