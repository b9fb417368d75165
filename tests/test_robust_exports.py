"""Robustness, group 8: plausible exports with NULLs, BLOBs or missing launch data."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_traces import GROUP_8

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_8, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
