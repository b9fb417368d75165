"""The reference figures of the foreign traces (tests/data/foreign) stay reproducible: recomputing
them from the traces and the manifest gives reference.json exactly."""
from __future__ import annotations

import json

from tests import foreign_reference


def test_reference_json_is_reproducible():
    recomputed = foreign_reference.build()
    stored = json.loads(foreign_reference.REFERENCE.read_text())
    assert stored["matmul_rule"] == foreign_reference.MATMUL.pattern
    assert json.loads(json.dumps(recomputed)) == stored["traces"]


def test_manifest_names_every_trace():
    manifest = json.loads(foreign_reference.MANIFEST.read_text())
    files = {entry["file"] for entry in manifest["traces"].values()}
    assert files == {p.name for p in foreign_reference.FOREIGN.glob("*.sqlite.xz")}


def test_steps_found_in_every_trace():
    stored = json.loads(foreign_reference.REFERENCE.read_text())["traces"]
    for name, trace in stored.items():
        for proc in trace["processes"]:
            assert proc["steps"]["measured"] > 0, name
            assert proc["kernels_without_launch"] == 0, name
