"""What an export holds: the nsys tables and columns the analyzer reads, the checks that they are
there (``sqlite_master`` / ``PRAGMA table_info``), and reading integer columns an export may lack."""
from __future__ import annotations

import sqlite3
from itertools import islice

import numpy as np

from analysis.errors import UnsupportedSchema

STRINGS_TABLE = "StringIds"
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
NVTX_TABLE = "NVTX_EVENTS"
GRAPH_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NSYS_TABLE_MARKERS = (STRINGS_TABLE, KERNEL_TABLE, RUNTIME_TABLE, NVTX_TABLE, "TARGET_INFO_GPU",
                      "TARGET_INFO_CUDA_GPU", "META_DATA_EXPORT", "EXPORT_META_DATA")

# NVTX event types (ENUM_NSYS_EVENT_TYPE). 70/71 are the older "Nvtxt" spellings of 59/60.
NVTX_MARK = (34,)
NVTX_PUSH_POP = (59, 70)
NVTX_START_END = (60, 71)
NVTX_DOMAIN_CREATE = 75

KERNEL_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                  "shortName", "demangledName")
MEMOP_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes")
RUNTIME_COLUMNS = ("start", "end", "globalTid", "correlationId", "nameId")
NVTX_COLUMNS = ("start", "end", "eventType", "textId", "globalTid", "endGlobalTid", "domainId")


def read_schema(conn: sqlite3.Connection) -> dict[str, dict[str, bool]]:
    """{table: {column: declared NOT NULL}} for every table of the export."""
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: {row[1]: bool(row[3]) for row in conn.execute(f'PRAGMA table_info("{t}")')}
            for t in tables}


def require_tables_are_tables(conn: sqlite3.Connection) -> None:
    """Refuse an export where a name the analyzer reads is a view (or other non-table): nsys writes
    tables only, and a view can compute rows without bound."""
    read = (*NSYS_TABLE_MARKERS, MEMCPY_TABLE, MEMSET_TABLE, GRAPH_TABLE)
    for name, kind in conn.execute("SELECT name, type FROM sqlite_master WHERE type NOT IN ('table', 'index')"):
        if name in read:
            raise UnsupportedSchema(f"its {name} is a {kind}, not a table; nsys exports hold tables only")


def count_rows(conn: sqlite3.Connection, schema: dict, table: str) -> int:
    if table not in schema:
        return 0
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def has_rows(conn: sqlite3.Connection, schema: dict, table: str) -> bool:
    """Whether ``table`` exists and holds a row (without counting them all)."""
    return table in schema and conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()[0] == 1


def require_columns(schema: dict, table: str, columns: tuple[str, ...], version: str | None):
    missing = [c for c in columns if c not in schema[table]]
    if missing:
        made_by = f"nsys {version}" if version else "an old nsys"
        raise UnsupportedSchema(
            f"its {table} table lacks {', '.join(missing)} (exported by {made_by}); "
            "export the report again with nsys 2021.1 or newer")


def read_ints(conn: sqlite3.Connection, schema: dict, table: str, columns: tuple[str, ...],
              where: str = "", chunk_rows: int = 1 << 16) -> dict[str, np.ndarray]:
    """Integer columns of a table as numpy arrays, in one scan streamed in chunks.

    NULLs and columns this export lacks read as -1. Each chunk of rows becomes one structured
    array (``np.fromiter``, no per-value Python loop) whose fields are copied into the columns,
    so the scan holds the columns plus one chunk. The columns are sized by the table's largest
    rowid (an index lookup, not a count): rows a ``where`` skips leave their pages untouched, so
    they cost no memory.
    """
    declared = schema[table]
    select = ", ".join(
        f'"{c}"' if declared.get(c) else f'coalesce("{c}", -1)' if c in declared else "-1"
        for c in columns)
    capacity = max(conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0, 0)
    row = np.dtype([(f"f{i}", np.int64) for i in range(len(columns))])
    values = [np.empty(capacity, dtype=np.int64) for _ in columns]
    cursor = conn.execute(f"SELECT {select} FROM {table} {where}")
    filled = 0
    while len(chunk := np.fromiter(islice(cursor, chunk_rows), dtype=row)):
        end = filled + len(chunk)
        if end > len(values[0]):  # rowids below 1: grow
            values = [np.concatenate([v[:filled], np.empty(2 * end - filled, dtype=np.int64)]) for v in values]
        for i, column in enumerate(values):
            column[filled:end] = chunk[f"f{i}"]
        filled = end
    return {c: v[:filled] for c, v in zip(columns, values)}


def export_metadata(conn: sqlite3.Connection, schema: dict) -> dict[str, str]:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in schema and {"name", "value"} <= set(schema[table]):
            return dict(conn.execute(f"SELECT name, value FROM {table}").fetchall())
    return {}
