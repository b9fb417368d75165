"""Robustness, group 4: decompression and export caches: size bound, partial and refused files, failed or hanging exports."""
from __future__ import annotations

import pytest

from tests.robust_cases import GROUP_4, assert_clean, params

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_4, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
