"""Shared test fixtures: the recorded traces committed under tests/data, and the external traces
of the shared folder beside the project (``$CS336_PROFILE_SHARED`` names another place)."""
from __future__ import annotations

import lzma
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SHARED = Path(os.environ.get("CS336_PROFILE_SHARED") or REPO.parent / "shared")
EXTERNAL = SHARED / "external-traces"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared trace folder sits beside the repository)")
    return path


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory) -> Path:
    """tests/data unpacked into a session folder: each ``.xz`` file decompressed, the rest copied,
    so a trace keeps its ``.timings.json`` and nsys CSVs beside it and tests never write tests/data."""
    folder = tmp_path_factory.mktemp("data")
    for source in sorted(DATA.iterdir()):
        if source.is_dir():  # tests/data/foreign has its own reader (tests/foreign_reference.py)
            continue
        if source.suffix == ".xz":
            with lzma.open(source) as packed, open(folder / source.stem, "wb") as unpacked:
                shutil.copyfileobj(packed, unpacked)
        else:
            shutil.copyfile(source, folder / source.name)
    return folder


@pytest.fixture(scope="session")
def fixture_trace(fixture_dir):
    """Return the path of a recorded trace (or a file beside it) from tests/data."""
    def path(name: str) -> Path:
        found = fixture_dir / name
        assert found.exists(), f"{name} is not in tests/data"
        return found
    return path


@pytest.fixture(scope="session")
def external_trace():
    """Return the path of a trace in the shared external-traces folder, skipping when absent."""
    return lambda name: _require(EXTERNAL / name)


@pytest.fixture(scope="session")
def example_site(tmp_path_factory, fixture_dir):
    """Return the folder of the ``examples`` or ``reference`` site (tests/example_site.py), each
    rendered once per session and shared by the report and browser tests."""
    from tests.example_site import render_example_site

    built: dict[str, Path] = {}

    def site(kind: str = "examples") -> Path:
        if kind not in built:
            built[kind] = render_example_site(tmp_path_factory.mktemp(f"site-{kind}"),
                                              tmp_path_factory.mktemp(f"inputs-{kind}"), kind, fixture_dir)
        return built[kind]
    return site
