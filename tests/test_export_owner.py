"""The loader owns the nsys export: no module of the analysis outside ``analysis/load/`` names an
nsys table (any name the export map gives one) or holds SQL in a string, and the map is what a
renamed table or column needs. Docstrings may name tables (they explain); code strings may not."""
from __future__ import annotations

import ast
import re
import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path

import pandas as pd
import pytest

from analysis.load import load_trace
from analysis.load.errors import TraceError, UnsupportedSchema
from analysis.load.export_map import KERNELS, METADATA, NVTX, TABLES, ExportColumn, ExportTable, nvtx_name_sql, table_names
from analysis.load.schema import read_schema, require_columns
from tests.conftest import REPO
from tests.synthetic import build_export

ANALYSIS = REPO / "analysis"
LOADER = ANALYSIS / "load"
# Modules outside the loader allowed SQL, each for a reason: the results cache is a database of
# its own (analysis summaries keyed by trace digest), not the nsys export.
OWN_DATABASES = {ANALYSIS / "app" / "cache.py": "the results cache's own SQLite database"}
SQL = re.compile(r"\b(SELECT\b.*\bFROM|INSERT\s+INTO|CREATE\s+(TEMP\s+)?(TABLE|VIEW|INDEX)|DELETE\s+FROM|"
                 r"UPDATE\s+\w+\s+SET|PRAGMA\s+\w+|ATTACH\s+DATABASE|DROP\s+TABLE)\b", re.DOTALL)
TABLE_NAME = re.compile(r"\b(" + "|".join(map(re.escape, table_names())) + r")\b")


def code_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string in a module but its docstrings, in line order; an f-string is
    one text, ``{}`` where it formats a value."""
    tree = ast.parse(path.read_text(), str(path))
    skipped = {id(node.body[0].value) for node in ast.walk(tree)
               if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
               and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values)
            found.append((node.lineno, "".join(part.value if isinstance(part, ast.Constant) else "{}"
                                               for part in node.values)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            found.append((node.lineno, node.value))
    return sorted(found)


def export_knowledge(path: Path) -> list[str]:
    """What in ``path`` names an nsys table or holds SQL."""
    return [f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}:{line}: {text[:60]!r}"
            for line, text in code_strings(path) if TABLE_NAME.search(text) or SQL.search(text)]


def test_no_module_outside_the_loader_names_an_nsys_table_or_holds_sql():
    bad = [finding for path in sorted(ANALYSIS.rglob("*.py"))
           if LOADER not in path.parents and path not in OWN_DATABASES
           for finding in export_knowledge(path)]
    assert not bad, bad


def test_the_scan_finds_a_table_name_and_sql_but_not_a_docstring(tmp_path):
    module = tmp_path / "reader.py"
    module.write_text('"""Reads NVTX_EVENTS (explained)."""\n'
                      'def f(conn, table):\n'
                      '    """Reads StringIds."""\n'
                      '    conn.execute(f"SELECT {conn} FROM {table} WHERE id = 1")\n'
                      '    return "CUPTI_ACTIVITY_KIND_KERNEL"\n')
    assert [finding.split(":")[1] for finding in export_knowledge(module)] == ["4", "5"]


def test_every_mapped_table_has_a_name_and_unique_tidy_columns():
    for table in TABLES:
        tidies = [column.tidy for column in table.columns]
        assert table.names and len(set(tidies)) == len(tidies), table.name


def test_a_former_table_name_is_read_through_the_map(tmp_path):
    path = build_export(tmp_path / "old.sqlite", kernels=[(100, 200, 90, 1, 1, 1)])
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(f"ALTER TABLE {METADATA.name} RENAME TO {METADATA.names[1]}")
    assert load_trace(path).nsys_version == "2025.3.2.0"


@contextmanager
def more_names(entry: ExportTable | ExportColumn, *names: str):
    """A table or column of the map with ``names`` after its own while the block runs: what the
    one line that supports a renamed nsys table or column changes."""
    own = entry.names
    object.__setattr__(entry, "names", own + names)
    try:
        yield
    finally:
        object.__setattr__(entry, "names", own)


def test_a_renamed_table_is_one_more_name_in_the_map(tmp_path):
    path = build_export(tmp_path / "t.sqlite", kernels=[(100, 200, 90, 1, 1, 1), (300, 350, 290, 1, 1, 2)],
                        ranges=[("step_0", 50, 400, 1, 1, 1, 59)])
    before = load_trace(path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(f"ALTER TABLE {KERNELS.name} RENAME TO KERNELS_OF_A_LATER_NSYS")
    with pytest.raises(TraceError, match="no CUDA kernel records"):
        load_trace(path)
    with more_names(KERNELS, "KERNELS_OF_A_LATER_NSYS"):
        after = load_trace(path)
    pd.testing.assert_frame_equal(after.kernels, before.kernels)
    pd.testing.assert_frame_equal(after.ranges, before.ranges)


def test_a_renamed_column_is_one_more_name_in_the_map(tmp_path):
    path = build_export(tmp_path / "renamed.sqlite", kernels=[(100, 200, 90, 1, 1, 1)],
                        ranges=[("step_0", 50, 400, 1, 1, 1, 59)])
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(f'ALTER TABLE {NVTX.name} RENAME COLUMN "text" TO "label"')
    assert load_trace(path).ranges["name"].tolist() == [""]  # unmapped: the name is lost
    with more_names(NVTX.spec("text"), "label"):
        assert load_trace(path).ranges["name"].tolist() == ["step_0"]
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute(f"SELECT {nvtx_name_sql(read_schema(conn))} FROM {NVTX.name}").fetchall() == [("step_0",)]


def test_the_nvtx_name_rule_in_sql_takes_text_else_the_registered_string(tmp_path):
    path = build_export(tmp_path / "names.sqlite", ranges=[("inline", 10, 20, 1, 1, 1, 59)], strings=("k", "registered"))
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("INSERT INTO NVTX_EVENTS (start, eventType, textId) VALUES (30, 59, 2)")
        names = conn.execute(f"SELECT {nvtx_name_sql(read_schema(conn), 'n')} FROM NVTX_EVENTS n ORDER BY start")
        assert [name for (name,) in names] == ["inline", "registered"]


def test_a_missing_required_column_is_named_by_nsys_name(tmp_path):
    path = build_export(tmp_path / "t.sqlite", kernels=[(100, 200, 90, 1, 1, 1)])
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("ALTER TABLE NVTX_EVENTS DROP COLUMN eventType")
        with pytest.raises(UnsupportedSchema, match="NVTX_EVENTS table lacks eventType"):
            require_columns(read_schema(conn), NVTX, None)
