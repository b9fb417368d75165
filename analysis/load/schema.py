"""What an export holds: its schema (``sqlite_master`` / ``PRAGMA table_info``), the checks that
the tables and columns of the export map (:mod:`analysis.load.export_map`) are there, and reading
integer columns an export may lack."""
from __future__ import annotations

import sqlite3
import warnings

import numpy as np

from analysis.load.errors import UnsupportedSchema
from analysis.load.export_map import GRAPHS, MARKERS, MEMCPY, MEMSET, METADATA, ExportTable, table_names

# NVTX event types (ENUM_NSYS_EVENT_TYPE). 70/71 are the older "Nvtxt" spellings of 59/60.
NVTX_MARK = (34,)
NVTX_PUSH_POP = (59, 70)
NVTX_START_END = (60, 71)
NVTX_DOMAIN_CREATE = 75


def read_schema(conn: sqlite3.Connection, tables: tuple[str, ...] | None = None) -> dict[str, dict[str, bool]]:
    """{table: {column: declared NOT NULL}} for every table of the export, or for those of
    ``tables`` it has (one query either way)."""
    only = f"AND m.name IN ({', '.join('?' * len(tables))})" if tables is not None else ""
    schema: dict[str, dict[str, bool]] = {}
    for table, column, not_null in conn.execute(
            "SELECT m.name, p.name, p.\"notnull\" FROM sqlite_master m JOIN pragma_table_info(m.name) p "
            f"WHERE m.type = 'table' {only}", tables or ()):
        schema.setdefault(table, {})[column] = bool(not_null)
    return schema


def require_tables_are_tables(conn: sqlite3.Connection) -> None:
    """Refuse an export where a name the analyzer reads is a view: nsys writes tables only, and a
    view can compute rows without bound. (A trigger of that name is harmless: triggers have a
    namespace of their own and are never read.)"""
    read = table_names((*MARKERS, MEMCPY, MEMSET, GRAPHS))
    for name, kind in conn.execute("SELECT name, type FROM sqlite_master WHERE type = 'view'"):
        if name in read:
            raise UnsupportedSchema(f"its {name} is a {kind}, not a table; nsys exports hold tables only")


def count_rows(conn: sqlite3.Connection, schema: dict, table: ExportTable) -> int:
    """Rows of ``table``; 0 when the export lacks it."""
    name = table.in_export(schema)
    if name is None:
        return 0
    return conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0]


def has_rows(conn: sqlite3.Connection, schema: dict, table: ExportTable) -> bool:
    """Whether ``table`` exists and holds a row (without counting them all)."""
    name = table.in_export(schema)
    return name is not None and conn.execute(f"SELECT EXISTS (SELECT 1 FROM {name})").fetchone()[0] == 1


def require_columns(schema: dict, table: ExportTable, version: str | None):
    """Refuse an export whose ``table`` (which it has) lacks one of the table's required columns."""
    missing = [column.name for column in table.columns if column.required and table.column(schema, column.tidy) is None]
    if missing:
        made_by = f"nsys {version}" if version else "an old nsys"
        raise UnsupportedSchema(
            f"its {table.in_export(schema)} table lacks {', '.join(missing)} (exported by {made_by}); "
            "export the report again with nsys 2021.1 or newer")


MISSING = -1  # what read_ints gives for NULL, a value that is not an integer, or a column the export lacks
INT64 = np.iinfo(np.int64)
SPAN_TRUSTED = 1 << 20  # a rowid span this small sizes a column at 8 MiB at most, whatever the rows


def read_ints(conn: sqlite3.Connection, schema: dict, table: str, columns: tuple[str, ...],
              where: str = "", chunk_rows: int = 1 << 16) -> dict[str, np.ndarray]:
    """Integer columns of a table as numpy arrays, in rowid order, read in chunks of
    ``chunk_rows`` rows; ``where`` is empty or ``WHERE <condition>``.

    NULLs, values that are not integers (text, BLOBs, fractions) and columns this export lacks
    read as :data:`MISSING`; callers that cannot use such a row drop it with a note. SQLite writes
    each chunk's column as one comma-separated text (``group_concat``, formatted in C) that numpy
    parses, so no Python object is made per value; all columns of a chunk come from one scan, so
    their rows line up. Chunks are rowid ranges of the table itself (``NOT INDEXED``: an index on a
    ``where`` column would make every chunk scan it), so the read stays linear; each chunk starts
    at the first rowid after the last (an index lookup), so rowids far apart cost one chunk each.
    The columns are sized by the number of rows, never by the rowid span: a row with rowid 4e18
    is one more row.
    """
    declared = schema[table]
    values = [f'"{c}"' if declared.get(c) else f'coalesce("{c}", {MISSING})' if c in declared else str(MISSING)
              for c in columns]
    condition = f"AND ({where.strip().removeprefix('WHERE')})" if where.strip() else ""
    in_chunk = f"FROM {table} NOT INDEXED WHERE rowid >= ? AND rowid <= ? {condition}"
    chunk_query = f"SELECT count(*), {', '.join(f'group_concat({v})' for v in values)} {in_chunk}"
    next_rowid = f"SELECT min(rowid) FROM {table} WHERE rowid >= ?"
    out = [np.empty(_row_bound(conn, table), dtype=np.int64) for _ in columns]
    filled = 0
    low = conn.execute(next_rowid, (INT64.min,)).fetchone()[0]
    while low is not None:
        high = min(low + chunk_rows - 1, INT64.max)
        count, *texts = conn.execute(chunk_query, (low, high)).fetchone()
        chunk = [_parsed_ints(text, count) for text in texts]
        if any(column is None for column in chunk):  # a value that is not an integer: read row by row
            rows = conn.execute(f"SELECT {', '.join(values)} {in_chunk}", (low, high)).fetchall()
            chunk = [int_column([row[i] for row in rows]) for i in range(len(values))]
        for column, part in zip(out, chunk):
            column[filled:filled + count] = part
        filled += count
        low = conn.execute(next_rowid, (high + 1,)).fetchone()[0] if high < INT64.max else None
    return {c: v[:filled] for c, v in zip(columns, out)}


def _row_bound(conn: sqlite3.Connection, table: str) -> int:
    """At most how many rows ``table`` holds: its rowid span (an index lookup) when that is under
    :data:`SPAN_TRUSTED` rows, else its row count (a walk over its pages), so that rowids far
    apart never size an array."""
    first, last = conn.execute(f"SELECT min(rowid), max(rowid) FROM {table}").fetchone()
    if first is None:
        return 0
    if last - first < SPAN_TRUSTED:
        return last - first + 1
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _parsed_ints(text: str | None, count: int) -> np.ndarray | None:
    """The ``count`` integers of a ``group_concat`` text; None when it holds anything else."""
    if not count:
        return np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns, and stops, at text that is not an integer
        try:
            parsed = np.fromstring(text, dtype=np.int64, sep=",")
        except (DeprecationWarning, ValueError, TypeError):
            return None
    return parsed if len(parsed) == count else None


def as_int(value) -> int:
    """An SQLite value as an integer: an integer as is, a whole REAL within int64 as its integer,
    anything else (NULL, text, BLOB, a fraction) as :data:`MISSING`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer() and INT64.min <= value < INT64.max:
        return int(value)
    return MISSING


def int_column(values) -> np.ndarray:
    """:func:`as_int` of each value, as an int64 array; a column of Python integers (the usual
    case) is converted at once."""
    values = np.asarray(values, dtype=object)
    if all(type(v) is int for v in values):
        return values.astype(np.int64)
    return np.fromiter((as_int(v) for v in values), dtype=np.int64, count=len(values))


def export_metadata(conn: sqlite3.Connection, schema: dict) -> dict[str, str]:
    """The export's metadata (``EXPORT_PRODUCT_VERSION``, ``EXPORT_SCHEMA_VERSION``...); {} without it."""
    name, value = METADATA.column(schema, "name"), METADATA.column(schema, "value")
    if name is None or value is None:
        return {}
    return dict(conn.execute(f'SELECT "{name}", "{value}" FROM {METADATA.in_export(schema)}').fetchall())


def read_columns(conn: sqlite3.Connection, schema: dict, table: ExportTable, tidies: tuple[str, ...],
                 where: str = "") -> dict[str, np.ndarray]:
    """:func:`read_ints` of the ``tidies`` columns of a mapped table the export has, keyed by those
    tidy names; a column the export lacks reads as :data:`MISSING`."""
    raw = read_ints(conn, schema, table.in_export(schema), table.nsys_names(schema, tidies), where)
    return dict(zip(tidies, raw.values()))
