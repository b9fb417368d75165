"""Robustness, group 10: runner command lines refused before any work; Ctrl-C keeps measured rows."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_traces import GROUP_10

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_10, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
