"""Robustness, issue 20: text from traces and file names that reaches a terminal or a page."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_load import GROUP_27

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_27, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
