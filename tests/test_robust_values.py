"""Robustness, group 2: odd values in config marks, timings.json and results files."""
from __future__ import annotations

import pytest

from tests.robust_cases import GROUP_2, assert_clean, params

NOT_FIXED = ("results-file-string-value",)


@pytest.mark.parametrize("case", params(GROUP_2, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
