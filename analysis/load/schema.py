"""What an export holds: its schema (``sqlite_master`` / ``PRAGMA table_info``), the checks that
the tables and columns of the export map (:mod:`analysis.load.export_map`) are there, and reading
integer columns an export may lack."""
from __future__ import annotations

import os
import sqlite3
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

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
INT32 = np.iinfo(np.int32)
SPAN_TRUSTED = 1 << 20  # a rowid span this small sizes a column at 8 MiB at most, whatever the rows


def read_ints(conn: sqlite3.Connection, schema: dict, table: str, columns: tuple[str, ...],
              where: str = "", chunk_rows: int = 1 << 16, workers: int | None = None) -> dict[str, np.ndarray]:
    """Integer columns of a table as numpy arrays, in rowid order, read in chunks of
    ``chunk_rows`` rows; ``where`` is empty or ``WHERE <condition>`` (plain SQL: it may be run
    on connections of its own).

    NULLs, values that are not integers (text, BLOBs, fractions) and columns this export lacks
    read as :data:`MISSING`; callers that cannot use such a row drop it with a note. SQLite writes
    each chunk's column as one comma-separated text (``group_concat``, formatted in C) that numpy
    parses, so no Python object is made per value; all columns of a chunk come from one scan, so
    their rows line up. Chunks are rowid ranges of the table itself (``NOT INDEXED``: an index on a
    ``where`` column would make every chunk scan it), so the read stays linear; each chunk starts
    at the first rowid after the last (an index lookup), so rowids far apart cost one chunk each.
    The columns are sized by the number of rows, never by the rowid span: a row with rowid 4e18
    is one more row.

    A table of a database file with more than :data:`PARALLEL_MIN_CHUNKS` chunks is read by up to
    ``workers`` threads (default: the cores this process may use, at most
    :data:`MAX_READ_WORKERS`), each on its own read-only connection and its own slice of the rowid
    range; SQLite formats the text with the interpreter's lock released, so the slices are read at
    the same time. The result is the same as one thread's.
    """
    return read_ints_and_largest(conn, schema, table, columns, None, where, chunk_rows, workers)[0]


def read_ints_and_largest(conn: sqlite3.Connection, schema: dict, table: str, columns: tuple[str, ...],
                          largest: str | None, where: str = "", chunk_rows: int = 1 << 16, workers: int | None = None,
                          narrow: tuple[str, ...] = ()) -> tuple[dict[str, np.ndarray], object]:
    """:func:`read_ints`, and the largest value of the column ``largest`` over the rows read (SQL's
    ``max``, NULL as :data:`MISSING`; None without rows or without ``largest``), found by the same
    scan of the table: a query of its own would scan the table again.

    The ``narrow`` columns (ids) are read into int32 columns, half the memory of int64 ones while
    the table is read. One whose value in the table's last row does not fit is read in int64 from
    the start (ids grow with the rows: correlation ids pass 2**31 at about a hundred million
    kernels); a value that does not fit further up makes the read start again with that column in
    int64, once the first read's arrays are let go."""
    narrow = _fitting_at_end(conn, schema, table, narrow)
    while True:
        try:
            return _read_ints_and_largest(conn, schema, table, columns, largest, where, chunk_rows, workers, narrow)
        except _NotNarrow as wide:
            column = wide.column
        # Out of the handler: its traceback, which holds the first read's arrays, is gone.
        narrow = tuple(name for name in narrow if name != column)


class _NotNarrow(ValueError):
    """A value of a column read in int32 that does not fit it."""

    def __init__(self, column: str):
        super().__init__(column)
        self.column = column


def _fitting_at_end(conn: sqlite3.Connection, schema: dict, table: str, narrow: tuple[str, ...]) -> tuple[str, ...]:
    """The ``narrow`` columns whose value in the table's last row fits int32 (or is not an
    integer: the read decides); those the export lacks are kept."""
    present = [name for name in narrow if name in schema[table]]
    if not present:
        return narrow
    quoted = ", ".join(f'"{name}"' for name in present)
    row = conn.execute(f"SELECT {quoted} FROM {table} WHERE rowid = (SELECT max(rowid) FROM {table})").fetchone()
    wide = {name for name, value in zip(present, row or ()) if type(value) is int and not INT32.min <= value <= INT32.max}
    return tuple(name for name in narrow if name not in wide)


def _read_ints_and_largest(conn: sqlite3.Connection, schema: dict, table: str, columns: tuple[str, ...],
                           largest: str | None, where: str, chunk_rows: int, workers: int | None,
                           narrow: tuple[str, ...]) -> tuple[dict[str, np.ndarray], object]:
    reader = _ChunkReader(schema[table], table, columns, where, chunk_rows, largest, narrow)
    first, last = _rowid_span(conn, table)
    if first is None:
        return {c: np.zeros(0, dtype=np.int64) for c in columns}, None
    slices = _rowid_slices(first, last, chunk_rows, _read_workers(workers))
    database = _database_file(conn)
    if len(slices) == 1 or database is None:
        out = [np.empty(_row_bound(conn, table, first, last), dtype=dtype) for dtype in reader.dtypes]
        filled, top = reader.fill(conn, first, last, out, 0)
        return {c: _trimmed(v, filled) for c, v in zip(columns, out)}, top
    return _read_slices(reader, database, conn.text_factory, slices)


# A table of fewer chunks than this is read by one thread: a thread and its connection would cost
# more than they save.
PARALLEL_MIN_CHUNKS = 8
MAX_READ_WORKERS = 8


def _read_workers(workers: int | None) -> int:
    if workers is not None:
        return max(workers, 1)
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return min(len(usable), MAX_READ_WORKERS)


def _rowid_slices(first: int, last: int, chunk_rows: int, workers: int) -> list[tuple[int, int]]:
    """``[first, last]`` cut into at most ``workers`` slices of equal rowid span, each of at least
    :data:`PARALLEL_MIN_CHUNKS` chunks' span (one slice for a small table)."""
    span = last - first + 1
    count = max(1, min(workers, span // (PARALLEL_MIN_CHUNKS * chunk_rows)))
    bounds = [first + span * i // count for i in range(count + 1)]
    return [(low, high - 1) for low, high in zip(bounds, bounds[1:])]


def _rowid_span(conn: sqlite3.Connection, table: str) -> tuple[int | None, int | None]:
    """The table's least and greatest rowid (None, None without rows). Two subqueries: SQLite
    finds a lone min(rowid) or max(rowid) at one end of the table, but scans every row for the
    pair in one SELECT."""
    return conn.execute(f"SELECT (SELECT min(rowid) FROM {table}), (SELECT max(rowid) FROM {table})").fetchone()


def _database_file(conn: sqlite3.Connection) -> Path | None:
    """The file of ``conn``'s main database; None for an in-memory or temporary one."""
    name = next((file for _, schema_name, file in conn.execute("PRAGMA database_list") if schema_name == "main"), "")
    return Path(name) if name else None


def _read_slices(reader: _ChunkReader, database: Path, text_factory, slices: list[tuple[int, int]]
                 ) -> tuple[dict[str, np.ndarray], object]:
    """Each rowid slice on a thread and connection of its own: first every slice's row count
    (those the ``where`` condition keeps, which places the slices in the columns), then the
    slices' rows. The columns are the size of the rows read, not of the table's rows."""
    with _slice_threads(database, text_factory, len(slices)) as (pool, conns):
        rows = list(pool.map(lambda c, s: c.execute(
            f"SELECT count(*) {reader.in_chunk}", s).fetchone()[0], conns, slices))
        offsets = np.concatenate([[0], np.cumsum(rows)]).tolist()
        out = [np.empty(offsets[-1], dtype=dtype) for dtype in reader.dtypes]
        filled = list(pool.map(lambda c, s, at: reader.fill(c, s[0], s[1], out, at), conns, slices, offsets))
    return dict(zip(reader.columns, out)), _largest(top for _, top in filled)


@contextmanager
def _slice_threads(database: Path, text_factory, count: int):
    """``count`` threads and a read-only connection of its own to ``database`` for each (a rowid
    slice of a table each), closed on the way out."""
    def connect(_) -> sqlite3.Connection:
        conn = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        conn.text_factory = text_factory
        return conn

    with ThreadPoolExecutor(count) as pool:
        conns = list(pool.map(connect, range(count)))
        try:
            yield pool, conns
        finally:
            for conn in conns:
                conn.close()


def _trimmed(column: np.ndarray, rows: int) -> np.ndarray:
    """The first ``rows`` values of ``column``, copied when that leaves some out: a view would keep
    the whole array (sized by the table's rowid span, not the rows read) alive."""
    return column if rows == len(column) else column[:rows].copy()


class _ChunkReader:
    """The queries of one :func:`read_ints_and_largest` call, and the chunk loop that fills columns
    from a rowid range."""

    def __init__(self, declared: dict[str, bool], table: str, columns: tuple[str, ...], where: str, chunk_rows: int,
                 largest: str | None = None, narrow: tuple[str, ...] = ()):
        self.table, self.columns, self.chunk_rows = table, columns, chunk_rows
        self.dtypes = [np.int32 if c in narrow else np.int64 for c in columns]
        self.values = [f'"{c}"' if declared.get(c) else f'coalesce("{c}", {MISSING})' if c in declared else str(MISSING)
                       for c in columns]
        condition = f"AND ({where.strip().removeprefix('WHERE')})" if where.strip() else ""
        self.in_chunk = f"FROM {table} NOT INDEXED WHERE rowid >= ? AND rowid <= ? {condition}"
        aggregates = [f"group_concat({v})" for v in self.values]
        self.largest = largest is not None
        if self.largest:
            aggregates.append(f'max(coalesce("{largest}", {MISSING}))')
        self.chunk_query = f"SELECT count(*), {', '.join(aggregates)} {self.in_chunk}"
        self.next_rowid = f"SELECT min(rowid) FROM {table} WHERE rowid >= ? AND rowid <= ?"

    def fill(self, conn: sqlite3.Connection, first: int, last: int, out: list[np.ndarray], at: int) -> tuple[int, object]:
        """Read the rows of rowids ``first``..``last`` into ``out`` from row ``at`` on; returns
        how many were read and the largest value of the ``largest`` column among them (None
        without rows or without that column)."""
        filled = at

        def into_out(chunk: list[np.ndarray]) -> None:
            nonlocal filled
            count = len(chunk[0])
            for name, column, part in zip(self.columns, out, chunk):
                if column.dtype == np.int32 and len(part) and not (INT32.min <= part.min() and part.max() <= INT32.max):
                    raise _NotNarrow(name)
                column[filled:filled + count] = part
            filled += count

        return self.chunks(conn, first, last, into_out)

    def chunks(self, conn: sqlite3.Connection, first: int, last: int, sink) -> tuple[int, object]:
        """Hand each chunk of the rows of rowids ``first``..``last`` to ``sink`` (one int64 array
        per column, in rowid order); returns how many rows were read and the largest value of the
        ``largest`` column among them."""
        read, tops = 0, []
        low = conn.execute(self.next_rowid, (first, last)).fetchone()[0]
        while low is not None:
            high = min(low + self.chunk_rows - 1, last)
            count, *texts = conn.execute(self.chunk_query, (low, high)).fetchone()
            if self.largest:
                tops.append(texts.pop())
            chunk = [_parsed_ints(text, count) for text in texts]
            if any(column is None for column in chunk):  # a value that is not an integer: read row by row
                rows = conn.execute(f"SELECT {', '.join(self.values)} {self.in_chunk}", (low, high)).fetchall()
                chunk = [int_column([row[i] for row in rows]) for i in range(len(self.values))]
            if count:
                sink(chunk)
            read += count
            low = conn.execute(self.next_rowid, (high + 1, last)).fetchone()[0] if high < last else None
        return read, _largest(tops)


def _largest(values) -> object:
    """The largest of per-chunk maxima, None (a chunk without rows) left out; None when all are."""
    return max((value for value in values if value is not None), default=None)


def _row_bound(conn: sqlite3.Connection, table: str, first: int, last: int) -> int:
    """At most how many rows ``table`` (rowids ``first``..``last``) holds: its rowid span when
    that is under :data:`SPAN_TRUSTED` rows, else its row count (a walk over its pages), so that
    rowids far apart never size an array."""
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
                 where: str = "", narrow: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """:func:`read_ints` of the ``tidies`` columns of a mapped table the export has, keyed by those
    tidy names; a column the export lacks reads as :data:`MISSING`. The ``narrow`` ones are int32
    where every value fits (:func:`read_ints_and_largest`)."""
    return read_columns_and_largest(conn, schema, table, tidies, None, where, narrow)[0]


def read_columns_and_largest(conn: sqlite3.Connection, schema: dict, table: ExportTable, tidies: tuple[str, ...],
                             largest: str | None, where: str = "", narrow: tuple[str, ...] = ()
                             ) -> tuple[dict[str, np.ndarray], object]:
    """:func:`read_columns`, and the largest value of the tidy column ``largest`` over the rows read
    (:func:`read_ints_and_largest`: the same scan)."""
    names = table.nsys_names(schema, tidies)
    raw, top = read_ints_and_largest(conn, schema, table.in_export(schema), names,
                                     None if largest is None else table.column(schema, largest), where,
                                     narrow=tuple(name for name, tidy in zip(names, tidies) if tidy in narrow))
    return dict(zip(tidies, raw.values())), top


def stream_columns(conn: sqlite3.Connection, schema: dict, table: ExportTable, tidies: tuple[str, ...],
                   largest: str | None, where: str, consume, chunk_rows: int = 1 << 16,
                   workers: int | None = None) -> object:
    """The ``tidies`` columns of a mapped table the export has, handed to ``consume(part, columns)``
    a chunk of rows at a time (``columns``: int64 arrays by tidy name, as :func:`read_columns`
    reads them) instead of being held whole; returns the largest value of the tidy column
    ``largest`` over the rows (as :func:`read_columns_and_largest`).

    The table is cut into rowid slices as :func:`read_ints` cuts it, each read on a thread and
    connection of its own; ``part`` is the slice's place in rowid order (0 first), and the chunks of
    one part come in rowid order. Chunks of different parts may come at the same time, from
    different threads: ``consume`` guards what they share."""
    name = table.in_export(schema)
    reader = _ChunkReader(schema[name], name, table.nsys_names(schema, tidies), where, chunk_rows,
                          None if largest is None else table.column(schema, largest))
    first, last = _rowid_span(conn, name)
    if first is None:
        return None
    slices = _rowid_slices(first, last, chunk_rows, _read_workers(workers))
    database = _database_file(conn)

    def read_part(part: int, part_conn: sqlite3.Connection) -> object:
        return reader.chunks(part_conn, *slices[part], lambda chunk: consume(part, dict(zip(tidies, chunk))))[1]

    if len(slices) == 1 or database is None:
        return _largest(read_part(part, conn) for part in range(len(slices)))
    with _slice_threads(database, conn.text_factory, len(slices)) as (pool, conns):
        return _largest(pool.map(read_part, range(len(slices)), conns))
