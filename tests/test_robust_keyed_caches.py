"""Robustness, caches (issue 20, group 6): an entry is served only when this install's key seals it."""
from __future__ import annotations

import json

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_app import GROUP_CACHES


@pytest.mark.parametrize("case", params(GROUP_CACHES))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)


def test_a_sealed_row_off_the_schema_is_not_served(tmp_path, monkeypatch):
    """The seal proves where a row came from; the schema check still refuses one of another layout."""
    from analysis.app.cache import verified_summary
    from analysis.load.local_key import seal

    monkeypatch.setenv("CS336_PROFILE_CACHE", str(tmp_path / "cache"))
    off_schema = json.dumps({"trace": "x.sqlite", "phases": "not phases"})
    assert verified_summary("k", (off_schema, seal("k", off_schema))) is None
    assert verified_summary("k", (off_schema, "0" * 64)) is None


def test_the_key_is_made_once_owner_only_and_a_damaged_one_is_refused(tmp_path, monkeypatch):
    from analysis.load import local_key

    monkeypatch.setenv("CS336_PROFILE_CACHE", str(tmp_path / "cache"))
    first = local_key.seal("a", "b")
    path = tmp_path / "cache" / local_key.KEY_FILE
    assert path.stat().st_mode & 0o777 == 0o600 and local_key.seal("a", "b") == first
    local_key._key_in.cache_clear()
    path.write_bytes(b"short")
    with pytest.raises(local_key.KeyUnavailable, match="damaged"):
        local_key.seal("a", "b")
    local_key._key_in.cache_clear()
