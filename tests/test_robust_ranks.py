"""Robustness, issue 20: ranks (host bits of globalPid, rank numbers against world_size, a lost rank in a diff)."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_load import GROUP_24

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_24, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
