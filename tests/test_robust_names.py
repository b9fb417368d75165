"""Robustness, group 6: output name collisions and inputs given twice."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_traces import GROUP_6

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_6, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
