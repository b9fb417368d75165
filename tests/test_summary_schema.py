"""The summary's documented layout: docs/summary.schema.json and the outline in
docs/architecture.md are the schema the code makes (neither can drift; `python docs/generate.py`
writes both), and the JSON of real analyzed traces validates against the documented schema."""
from __future__ import annotations

import json
import re

import pytest

from analysis import analyze_trace
from analysis.app.analyze import summary_schema
from analysis.trace.summary_schema import SCHEMA_VERSION, problems
from docs.generate import summary_outline as outline
from tests.conftest import REPO

SCHEMA_FILE = REPO / "docs" / "summary.schema.json"
ARCHITECTURE = REPO / "docs" / "architecture.md"
OUTLINE_BLOCK = re.compile(r"<!-- summary-outline -->\n```text\n(.*?)```", re.DOTALL)
EXAMPLE_TRACES = ("small_ctx128_train_fp32.sqlite.xz", "small_ctx128_forward_fp32.sqlite.xz")


def test_the_documented_schema_is_the_code_schema():
    documented = json.loads(SCHEMA_FILE.read_text())
    assert documented == summary_schema()
    assert documented["version"] == SCHEMA_VERSION
    block = OUTLINE_BLOCK.search(ARCHITECTURE.read_text())
    assert block, "docs/architecture.md lost its summary outline"
    assert block.group(1).splitlines() == outline(summary_schema())


@pytest.mark.parametrize("name", EXAMPLE_TRACES)
def test_real_summaries_validate_against_the_documented_schema(name):
    summary = json.loads(json.dumps(analyze_trace(REPO / "nsys_runs" / "traces" / name)))
    assert problems(summary, json.loads(SCHEMA_FILE.read_text())) == []


def test_the_validator_finds_a_missing_key_and_a_wrong_type():
    schema = summary_schema()
    assert problems({"trace": 3}, schema)[:1] == ["$: missing 'analyzer_version'"]
    assert "$.trace: expected string, got int" in problems({"trace": 3}, schema)
