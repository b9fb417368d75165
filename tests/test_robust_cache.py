"""Robustness, group 1: results cache (results.db): stale, corrupt, foreign or forged entries, concurrent runs, kill -9."""
from __future__ import annotations

import pytest

from tests.robust_cases import GROUP_1, assert_clean, params

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_1, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
