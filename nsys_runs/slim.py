"""Smaller copies of exports and their xz compression, for traces kept in the repository.

A slim copy drops the tables the analyzer never reads (OS runtime calls and their call stacks,
nsys's own overhead ranges) and the rows and strings that record the profiled process's
environment and working folder (environment variables can hold credentials), then VACUUMs. Every kept table keeps
its schema, so the copy is still a valid export. Source paths under the working folder (Python
files that backtraces intern) are made relative to it.
"""
from __future__ import annotations

import lzma
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from analysis.load.export_map import CAPTURE_METADATA, OS_RUNTIME, OS_RUNTIME_CALLCHAINS, PROFILER_OVERHEAD, STRINGS, SYSTEM_ENVIRONMENT
from analysis.load.schema import read_schema

DROPPED_TABLES = tuple(table.name for table in (OS_RUNTIME, OS_RUNTIME_CALLCHAINS, PROFILER_OVERHEAD))
WORKING_DIR_ROWS = "name LIKE 'PROCESS\\_%:WORKING\\_DIR' ESCAPE '\\'"
PRIVATE_ROWS = {  # table → which rows to delete
    CAPTURE_METADATA.name: f"name LIKE 'PROCESS\\_%:ENVIRONMENT\\_VARIABLE' ESCAPE '\\' OR {WORKING_DIR_ROWS}",
    SYSTEM_ENVIRONMENT.name: "name = 'DeviceEnvironment'",
}
# Whole environments are also interned as NUL-separated `KEY=VALUE` strings; kernel and range
# names never hold a NUL, so such strings are blanked (their ids stay valid).
BLANK_ENVIRONMENT_STRINGS = f"UPDATE {STRINGS.name} SET value = '' WHERE instr(CAST(value AS BLOB), X'00') > 0"


def _relative_paths(connection: sqlite3.Connection, folders: list[str]) -> None:
    """Strings that are paths under one of `folders` lose that prefix (`<folder>/a/b.py` → `a/b.py`)."""
    for folder in folders:
        prefix = folder.rstrip("/") + "/"
        connection.execute(f"UPDATE {STRINGS.name} SET value = substr(value, ?) WHERE substr(value, 1, ?) = ?",
                           (len(prefix) + 1, len(prefix), prefix))


def slim_copy(export: Path, destination: Path, working_folders: tuple[str, ...] = ()) -> Path:
    """Write `destination`: `export` without DROPPED_TABLES and PRIVATE_ROWS, vacuumed, paths under the
    profiled process's working folder (and `working_folders`) made relative."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".partial")
    shutil.copyfile(export, partial)
    with closing(sqlite3.connect(partial, isolation_level=None)) as connection:  # autocommit: VACUUM needs it
        present = set(read_schema(connection))
        folders = list(working_folders)
        if CAPTURE_METADATA.name in present:
            folders += [row[0] for row in connection.execute(
                f"SELECT value FROM {CAPTURE_METADATA.name} WHERE {WORKING_DIR_ROWS}")]
        for table in DROPPED_TABLES:
            if table in present:
                connection.execute(f'DROP TABLE "{table}"')
        for table, condition in PRIVATE_ROWS.items():
            if table in present:
                connection.execute(f'DELETE FROM "{table}" WHERE {condition}')
        if STRINGS.name in present:
            connection.execute(BLANK_ENVIRONMENT_STRINGS)
            _relative_paths(connection, [folder for folder in folders if folder])
        connection.execute("VACUUM")
    partial.replace(destination)
    return destination


def compress_xz(path: Path) -> Path:
    """Compress `path` to `path.xz` and remove the original; return the new path."""
    compressed = path.with_name(path.name + ".xz")
    partial = compressed.with_name(compressed.name + ".partial")
    with open(path, "rb") as source, lzma.open(partial, "wb") as sink:
        shutil.copyfileobj(source, sink, length=1 << 20)
    partial.replace(compressed)
    path.unlink()
    return compressed
