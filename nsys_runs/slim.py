"""Smaller copies of exports and their xz compression, for traces kept in the repository.

A slim copy drops the tables the analyzer never reads (OS runtime calls and their call stacks,
nsys's own overhead ranges), then VACUUMs. Every kept table keeps its schema, so the copy is
still a valid export.
"""
from __future__ import annotations

import lzma
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

DROPPED_TABLES = ("OSRT_API", "OSRT_CALLCHAINS", "PROFILER_OVERHEAD")


def slim_copy(export: Path, destination: Path) -> Path:
    """Write `destination`: `export` without DROPPED_TABLES, vacuumed."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".partial")
    shutil.copyfile(export, partial)
    with closing(sqlite3.connect(partial, isolation_level=None)) as connection:  # autocommit: VACUUM needs it
        present = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in DROPPED_TABLES:
            if table in present:
                connection.execute(f'DROP TABLE "{table}"')
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
