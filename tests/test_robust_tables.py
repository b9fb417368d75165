"""Robustness, issue 20: optional tables (memory events, GPU metrics) and ids far past the row count."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_load import GROUP_22, GROUP_23

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_22 + GROUP_23, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
