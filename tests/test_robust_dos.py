"""Robustness, group 7: crafted exports that would take unbounded memory or time, inputs that block."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_traces import GROUP_7

NOT_FIXED = ("stringids-view", "string-id-4e8", "nesting-100k-deep", "fifo-input")


@pytest.mark.parametrize("case", params(GROUP_7, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
