"""What an nsys SQLite export holds, looked up before use: its tables, a table's columns, and
the SQL that reads an NVTX event's name (tables and columns differ between nsys versions)."""
from __future__ import annotations

import sqlite3


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The tables of the export (the `main` database of `conn`)."""
    return {row[0] for row in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}


def column_names(conn: sqlite3.Connection, table: str) -> list[str]:
    """The columns of one table of the export, in order."""
    return [row[1] for row in conn.execute(f'PRAGMA main.table_info("{table}")')]


def nvtx_name_sql(alias: str, nvtx_columns: list[str], tables: set[str]) -> str:
    """SQL for the name of NVTX_EVENTS row `alias`: its `text`, else the string registered as its `textId`."""
    if "textId" in nvtx_columns and "StringIds" in tables:
        return f"coalesce({alias}.text, (SELECT value FROM main.StringIds s WHERE s.id = {alias}.textId))"
    return f"{alias}.text"
