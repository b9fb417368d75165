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


@pytest.fixture(scope="session")
def example_site(tmp_path_factory):
    """Return the folder of the ``examples`` or ``reference`` site (tests/example_site.py), each
    rendered once per session and shared by the report and browser tests."""
    from tests.example_site import render_example_site

    built: dict[str, Path] = {}

    def site(kind: str = "examples") -> Path:
        if kind not in built:
            built[kind] = render_example_site(tmp_path_factory.mktemp(f"site-{kind}"),
                                              tmp_path_factory.mktemp(f"inputs-{kind}"), kind)
        return built[kind]
    return site
