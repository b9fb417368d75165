"""Robustness, diff, runner and the rest (issue 20, groups 8, 10 and 11)."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_app import GROUP_DIFF, GROUP_OTHER, GROUP_RUNNER


@pytest.mark.parametrize("case", params(GROUP_DIFF + GROUP_RUNNER + GROUP_OTHER))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
