"""Robustness, group 3: the output folder and the disk: uncreatable, a file, full, results.db unwritable."""
from __future__ import annotations

import pytest

from tests.robust_cases import GROUP_3, assert_clean, params

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_3, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
