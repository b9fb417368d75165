"""Build a larger nsys SQLite export by repeating the measured steps of a real one.

    python -m nsys_runs.scale_trace SRC.sqlite -o OUT.sqlite --kernels 1000000
    python -m nsys_runs.scale_trace SRC.sqlite -o OUT.sqlite --repeat 2

The source is copied byte for byte (it is never opened), then the rows of its measured
`step_<i>` windows are appended again, once per copy, entirely in SQL (`INSERT ... SELECT`), so a
multi-million-kernel trace builds in seconds with bounded memory. What one copy holds:

- the CUDA runtime/driver API calls that start inside a step window (same process);
- the kernels, memcpys, memsets and synchronizations those calls launched (same correlationId,
  same process), wherever on the GPU timeline they ran;
- the NVTX ranges and marks that start inside a step window (the step range itself included).

Copy k is shifted in time so that it starts `COPY_GAP_NS` after every earlier row of these tables
ends (the source's and the previous copy's); its correlation ids are shifted by
k * (largest id + 1) in the runtime and GPU tables alike (so each launch still joins its GPU work
one to one within a process), its NVTX start/end `rangeId`s the same way, and its step ranges are
renamed `step_<i + k * n>` (n = largest step index + 1) so step names stay unique. A step name held in `StringIds` (via `textId`) gets a new string
row. Every table keeps its schema; `ANALYSIS_DETAILS` gets the longer capture end.
"""
from __future__ import annotations

import argparse
import math
import shutil
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

from analysis.load.export_map import (
    ANALYSIS_DETAILS,
    KERNELS,
    MEMCPY,
    MEMSET,
    NVTX,
    RUNTIME,
    STRINGS,
    SYNCHRONIZATIONS,
    nvtx_name_sql,
)
from analysis.load.schema import NVTX_MARK, NVTX_PUSH_POP, NVTX_START_END, read_schema

STEP_PREFIX = "step_"
COPY_GAP_NS = 1_000_000  # idle time between consecutive copies, as between real steps
RUNTIME_TABLE = RUNTIME.name
NVTX_TABLE = NVTX.name
KERNEL_TABLE = KERNELS.name
# GPU-side activity tied to its API call by (correlationId, process).
GPU_ACTIVITY_TABLES = tuple(table.name for table in (KERNELS, MEMCPY, MEMSET, SYNCHRONIZATIONS))
NVTX_RANGE_TYPES = NVTX_PUSH_POP + NVTX_START_END
NVTX_RANGE_AND_MARK_TYPES = NVTX_MARK + NVTX_RANGE_TYPES
PID_MASK = 0xFFFFFF


class ScaleError(Exception):
    """The source trace cannot be scaled (one-line message for users)."""


@dataclass(frozen=True)
class ScaledTrace:
    """What `scale_trace` wrote."""

    path: Path
    copies: int
    measured_steps: int  # step ranges in the source
    kernels_in_source: int
    kernels_per_copy: int

    @property
    def kernels_total(self) -> int:
        """Kernels in the written trace."""
        return self.kernels_in_source + self.copies * self.kernels_per_copy


def _pid(global_id_column: str) -> str:
    """SQL for the process id held in a globalTid/globalPid column."""
    return f"(({global_id_column} >> 24) & {PID_MASK})"


def _find_step_windows(conn: sqlite3.Connection, tables: set[str]) -> int:
    """Fill temp.step_windows with the closed `step_<i>` ranges; return how many there are."""
    if NVTX_TABLE not in tables or RUNTIME_TABLE not in tables:
        raise ScaleError(f"the trace has no {NVTX_TABLE} or no {RUNTIME_TABLE} table: nothing to repeat")
    name = nvtx_name_sql(read_schema(conn), "n", database="main")
    conn.execute(
        f"""
        CREATE TEMP TABLE step_windows AS
        SELECT event_rowid, start_ns, end_ns, pid, CAST(substr(name, {len(STEP_PREFIX) + 1}) AS INTEGER) AS step_index
        FROM (
            SELECT n.rowid AS event_rowid, n.start AS start_ns, n."end" AS end_ns,
                   {_pid('n.globalTid')} AS pid, {name} AS name
            FROM main.{NVTX_TABLE} n
            WHERE n.eventType IN {NVTX_RANGE_TYPES} AND n."end" IS NOT NULL
        )
        WHERE name GLOB '{STEP_PREFIX}[0-9]*'
          AND name = '{STEP_PREFIX}' || CAST(substr(name, {len(STEP_PREFIX) + 1}) AS INTEGER)
        """
    )
    count = conn.execute("SELECT count(*) FROM temp.step_windows").fetchone()[0]
    if count == 0:
        raise ScaleError(f"the trace has no closed NVTX ranges named {STEP_PREFIX}<i>: nothing to repeat")
    return count


def _build_templates(conn: sqlite3.Connection, tables: set[str]) -> list[str]:
    """Copy one instance of the rows to repeat into temp.template_<table>; return the tables."""
    in_window = f"""EXISTS (SELECT 1 FROM temp.step_windows w
                    WHERE w.pid = {_pid('t.globalTid')} AND t.start BETWEEN w.start_ns AND w.end_ns)"""
    conn.execute(
        f"""CREATE TEMP TABLE template_{RUNTIME_TABLE} AS
            SELECT t.* FROM main.{RUNTIME_TABLE} t WHERE {in_window} ORDER BY t.start"""
    )
    conn.execute(
        f"CREATE INDEX temp.template_runtime_correlation ON template_{RUNTIME_TABLE} (correlationId, globalTid)"
    )
    copied = [RUNTIME_TABLE]
    for table in GPU_ACTIVITY_TABLES:
        if table not in tables or not {"correlationId", "globalPid"} <= set(column_names(conn, table)):
            continue
        conn.execute(
            f"""CREATE TEMP TABLE template_{table} AS
                SELECT t.* FROM main.{table} t
                WHERE EXISTS (SELECT 1 FROM temp.template_{RUNTIME_TABLE} r
                              WHERE r.correlationId = t.correlationId
                                AND {_pid('r.globalTid')} = {_pid('t.globalPid')})
                ORDER BY t.start"""
        )
        copied.append(table)
    conn.execute(
        f"""CREATE TEMP TABLE template_{NVTX_TABLE} AS
            SELECT t.*, s.step_index AS step_index
            FROM main.{NVTX_TABLE} t LEFT JOIN temp.step_windows s ON s.event_rowid = t.rowid
            WHERE t.eventType IN {NVTX_RANGE_AND_MARK_TYPES} AND {in_window}
            ORDER BY t.start"""
    )
    copied.append(NVTX_TABLE)
    return copied


def _max(conn: sqlite3.Connection, expression: str, tables: list[str], schema: str) -> int | None:
    """Largest value of `expression` over the given tables (None when all are empty)."""
    values = [conn.execute(f"SELECT max({expression}) FROM {schema}.{name}").fetchone()[0] for name in tables]
    values = [value for value in values if value is not None]
    return max(values) if values else None


def _fill_copy_shifts(conn: sqlite3.Connection, copied: list[str], copies: int) -> None:
    """Fill temp.copy_shifts: per copy, the offsets added to times, ids and step indices."""
    templates = [f"template_{name}" for name in copied]
    correlated = [name for name in copied if name != NVTX_TABLE]
    data_end_ns = _max(conn, 'coalesce("end", start)', copied, "main")
    template_start_ns = conn.execute("SELECT min(start_ns) FROM temp.step_windows").fetchone()[0]
    template_end_ns = _max(conn, 'coalesce("end", start)', templates, "temp")
    period_ns = template_end_ns - template_start_ns + COPY_GAP_NS
    correlation_stride = (_max(conn, "correlationId", correlated, "main") or 0) + 1
    has_range_ids = "rangeId" in column_names(conn, NVTX_TABLE)
    range_id_stride = (_max(conn, "rangeId", [NVTX_TABLE], "main") or 0) + 1 if has_range_ids else 0
    step_stride = conn.execute("SELECT max(step_index) FROM temp.step_windows").fetchone()[0] + 1
    has_string_ids = STRINGS.name in table_names(conn)
    next_string_id = (conn.execute(f"SELECT max(id) FROM main.{STRINGS.name}").fetchone()[0] or 0) + 1 if has_string_ids else 0
    conn.execute(
        """CREATE TEMP TABLE copy_shifts (copy_index INTEGER PRIMARY KEY, time_shift_ns INTEGER,
           correlation_shift INTEGER, range_id_shift INTEGER, step_shift INTEGER, string_id_base INTEGER)"""
    )
    first_shift_ns = data_end_ns + COPY_GAP_NS - template_start_ns
    conn.executemany(
        "INSERT INTO temp.copy_shifts VALUES (?, ?, ?, ?, ?, ?)",
        (
            (
                k,
                first_shift_ns + (k - 1) * period_ns,
                k * correlation_stride,
                k * range_id_stride,
                k * step_stride,
                next_string_id + (k - 1) * step_stride,
            )
            for k in range(1, copies + 1)
        ),
    )


def _shifted_column_sql(table: str, column: str) -> str:
    """SQL for one column of a copied row (template row t, its copy's offsets c)."""
    if column in ("start", "end"):
        return f't."{column}" + c.time_shift_ns'
    if column == "correlationId" and table != NVTX_TABLE:
        return "t.correlationId + c.correlation_shift"
    if table == NVTX_TABLE and column == "rangeId":
        return "t.rangeId + c.range_id_shift"
    if table == NVTX_TABLE and column == "text":
        return f"""CASE WHEN t.step_index IS NOT NULL AND t.text IS NOT NULL
                   THEN '{STEP_PREFIX}' || (t.step_index + c.step_shift) ELSE t.text END"""
    if table == NVTX_TABLE and column == "textId":
        return """CASE WHEN t.step_index IS NOT NULL AND t.text IS NULL
                  THEN c.string_id_base + t.step_index ELSE t.textId END"""
    return f't."{column}"'


def _append_copies(conn: sqlite3.Connection, copied: list[str]) -> None:
    """Append every copy of every template table, copy after copy, in time order."""
    if STRINGS.name in table_names(conn):
        conn.execute(
            f"""INSERT INTO main.{STRINGS.name} (id, value)
                SELECT c.string_id_base + s.step_index, '{STEP_PREFIX}' || (s.step_index + c.step_shift)
                FROM temp.copy_shifts c CROSS JOIN
                     (SELECT DISTINCT step_index FROM temp.template_{NVTX_TABLE}
                      WHERE step_index IS NOT NULL AND text IS NULL) s"""
        )
    for table in copied:
        columns = column_names(conn, table)
        names = ", ".join(f'"{column}"' for column in columns)
        values = ", ".join(_shifted_column_sql(table, column) for column in columns)
        # CROSS JOIN keeps copy_shifts as the outer loop: copy 1's rows, then copy 2's, ...
        conn.execute(
            f"""INSERT INTO main.{table} ({names})
                SELECT {values} FROM temp.copy_shifts c CROSS JOIN temp.template_{table} t"""
        )


def _extend_capture_end(conn: sqlite3.Connection, copied: list[str]) -> None:
    """Move ANALYSIS_DETAILS' stop time past the last appended row."""
    if ANALYSIS_DETAILS.name not in table_names(conn):
        return
    if not set(ANALYSIS_DETAILS.required) <= set(column_names(conn, ANALYSIS_DETAILS.name)):
        return
    data_end_ns = _max(conn, 'coalesce("end", start)', copied, "main")
    conn.execute(
        f"UPDATE main.{ANALYSIS_DETAILS.name} SET stopTime = max(stopTime, ?), duration = max(stopTime, ?) - startTime",
        (data_end_ns, data_end_ns),
    )


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The tables of the export (the `main` database of `conn`)."""
    return set(read_schema(conn))


def column_names(conn: sqlite3.Connection, table: str) -> list[str]:
    """The columns of one table of the export, in order."""
    return list(read_schema(conn, (table,)).get(table, {}))


def _count(conn: sqlite3.Connection, schema_table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {schema_table}").fetchone()[0]


def scale_trace(source: Path, out: Path, *, repeat: int | None = None, kernels: int | None = None) -> ScaledTrace:
    """Write `out`: `source` plus `repeat` copies of its measured steps.

    Give either `repeat` (copies to append) or `kernels` (append the fewest copies that bring the
    trace to at least that many kernels). The output is written to `<out>.partial` and renamed
    when complete; `source` is only read as bytes.
    """
    if (repeat is None) == (kernels is None):
        raise ValueError("give exactly one of repeat or kernels")
    source, out = Path(source), Path(out)
    if not source.is_file():
        raise ScaleError(f"{source}: no such file")
    if out.resolve() == source.resolve():
        raise ScaleError("the output must not be the source trace")
    partial = out.with_name(out.name + ".partial")
    shutil.copyfile(source, partial)
    try:
        conn = sqlite3.connect(partial, isolation_level=None)
        try:
            result = _scale_in_place(conn, out, repeat, kernels)
        finally:
            conn.close()
        partial.replace(out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return result


def _scale_in_place(conn: sqlite3.Connection, out: Path, repeat: int | None, kernels: int | None) -> ScaledTrace:
    """Append the copies inside the already-copied database behind `conn`."""
    # A fresh file that is renamed only when complete: no journal needed. Spill temp data to disk.
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA temp_store = FILE")
    conn.execute("PRAGMA cache_size = -65536")  # 64 MiB of page cache
    conn.execute("BEGIN")
    tables = table_names(conn)
    measured_steps = _find_step_windows(conn, tables)
    copied = _build_templates(conn, tables)
    has_kernels = KERNEL_TABLE in copied
    kernels_in_source = _count(conn, f"main.{KERNEL_TABLE}") if has_kernels else 0
    kernels_per_copy = _count(conn, f"temp.template_{KERNEL_TABLE}") if has_kernels else 0
    if repeat is None:
        missing = max(0, kernels - kernels_in_source)
        if missing and kernels_per_copy == 0:
            raise ScaleError("the measured steps launch no kernels: no number of copies reaches the target")
        repeat = math.ceil(missing / kernels_per_copy) if missing else 0
    if repeat < 0:
        raise ScaleError("the number of copies cannot be negative")
    if repeat:
        _fill_copy_shifts(conn, copied, repeat)
        _append_copies(conn, copied)
        _extend_capture_end(conn, copied)
    conn.execute("COMMIT")
    return ScaledTrace(out, repeat, measured_steps, kernels_in_source, kernels_per_copy)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m nsys_runs.scale_trace",
        description="Write a larger nsys SQLite export by repeating the measured step_<i> windows of SOURCE.",
    )
    parser.add_argument("source", type=Path, help="nsys SQLite export with step_<i> NVTX ranges")
    parser.add_argument("-o", "--out", type=Path, required=True, help="where to write the scaled trace")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--repeat", type=int, metavar="K", help="append K copies of the measured steps")
    size.add_argument("--kernels", type=int, metavar="N", help="append copies until the trace has at least N kernels")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command line: scale one trace, print one line about the result."""
    args = build_parser().parse_args(argv)
    try:
        scaled = scale_trace(args.source, args.out, repeat=args.repeat, kernels=args.kernels)
    except ScaleError as error:
        print(f"scale_trace: {error}", file=sys.stderr)
        return 1
    print(
        f"{scaled.path}: {scaled.copies} copies of {scaled.measured_steps} measured steps, "
        f"{scaled.kernels_total:,} kernels ({scaled.kernels_per_copy:,} per copy)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
