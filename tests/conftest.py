"""Shared test fixtures: paths to the real traces kept beside the project."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures" / "nsys"
EXTERNAL = SHARED / "external-traces"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared trace folder sits beside the repository)")
    return path


@pytest.fixture
def fixture_trace():
    """Return the path of a trace in ../shared/fixtures/nsys, skipping when absent."""
    return lambda name: _require(FIXTURES / name)


@pytest.fixture
def external_trace():
    """Return the path of a trace in ../shared/external-traces, skipping when absent."""
    return lambda name: _require(EXTERNAL / name)
