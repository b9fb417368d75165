"""Robustness, issue 20: faults still open from the first round (NULL ids, schema variants, --out, Ctrl-C)."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_load import GROUP_29

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_29, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)
