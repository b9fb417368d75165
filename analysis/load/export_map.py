"""The one map of the nsys export: every table the analyzer reads, the names nsys has given it,
its columns (required or optional, with the names nsys has given each) and what the loader calls
them; the tables this project's tools edit but the analyzer never reads; and the one rule for an
NVTX event's name.

Readers in :mod:`analysis.load` build their SQL from this map: :meth:`ExportTable.in_export`
gives the name a table has in one export, :meth:`ExportTable.column` a column's. Supporting a
table or column that nsys renames is one more name in its ``names`` here (and a test).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np



@dataclass(frozen=True)
class ExportColumn:
    """One column: the loader's (tidy) name, nsys's names for it (newest first) and its SQL type."""

    tidy: str
    names: tuple[str, ...]
    sql_type: str = "INTEGER"  # with the constraints nsys declares (for CREATE TABLE)
    required: bool = True

    @property
    def name(self) -> str:
        """The name nsys writes today."""
        return self.names[0]


@dataclass(frozen=True)
class ExportTable:
    """One nsys table: its names (newest first) and the columns the analyzer reads of it."""

    names: tuple[str, ...]
    columns: tuple[ExportColumn, ...]

    @property
    def name(self) -> str:
        """The name nsys writes today."""
        return self.names[0]

    def in_export(self, schema: dict) -> str | None:
        """The name this table has in an export (``schema``: :func:`analysis.load.schema.read_schema`),
        None when it has none of them."""
        return next((name for name in self.names if name in schema), None)

    def spec(self, tidy: str) -> ExportColumn:
        """The column the loader calls ``tidy``."""
        return next(column for column in self.columns if column.tidy == tidy)

    def column(self, schema: dict, tidy: str) -> str | None:
        """The name of column ``tidy`` in this export's table, None when the table or column is absent."""
        declared = schema.get(self.in_export(schema) or "", {})
        return next((name for name in self.spec(tidy).names if name in declared), None)

    def nsys_names(self, schema: dict, tidies: tuple[str, ...]) -> tuple[str, ...]:
        """The export's names of the ``tidies`` columns; a column it lacks keeps nsys's name of today
        (a reader such as :func:`analysis.load.schema.read_ints` reads it as missing)."""
        return tuple(self.column(schema, tidy) or self.spec(tidy).name for tidy in tidies)

    @property
    def required(self) -> tuple[str, ...]:
        """nsys's names of today of the columns without which the table is not read."""
        return tuple(column.name for column in self.columns if column.required)

    def create_sql(self, without: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> str:
        """``CREATE TABLE`` of this table with nsys's names of today: the mapped columns in order
        but those (tidy names) ``without``, then the column definitions ``extra``; for tools and
        test fixtures that write exports."""
        defined = [f'"{column.name}" {column.sql_type}' for column in self.columns if column.tidy not in without]
        return f"CREATE TABLE {self.name} ({', '.join(defined + list(extra))})"


def _columns(*specs: tuple, required: bool = True) -> tuple[ExportColumn, ...]:
    """Columns from ``(tidy, nsys name or names[, sql type])`` tuples."""
    made = []
    for tidy, names, *sql_type in specs:
        made.append(ExportColumn(tidy, (names,) if isinstance(names, str) else names, *sql_type, required=required))
    return tuple(made)


_ACTIVITY = (("start_ns", "start"), ("end_ns", "end"), ("device_id", "deviceId"), ("stream_id", "streamId"),
             ("correlation_id", "correlationId"), ("pid", "globalPid"))

STRINGS = ExportTable(("StringIds",), _columns(("id", "id", "INTEGER PRIMARY KEY"), ("value", "value", "TEXT NOT NULL")))
METADATA = ExportTable(("META_DATA_EXPORT", "EXPORT_META_DATA"),
                       _columns(("name", "name", "TEXT"), ("value", "value", "TEXT")))
# The short name (``shortName``) is not read: every figure names a kernel by its demangled name.
KERNELS = ExportTable(("CUPTI_ACTIVITY_KIND_KERNEL",), _columns(*_ACTIVITY, ("demangled_name", "demangledName"))
                      + _columns(("name", "shortName"), required=False))
RUNTIME = ExportTable(("CUPTI_ACTIVITY_KIND_RUNTIME",),
                      _columns(("start_ns", "start"), ("end_ns", "end"), ("tid", "globalTid"),
                               ("correlation_id", "correlationId"), ("name_id", "nameId")))
# Copies and fills: a column an export lacks reads as missing (no column is required).
MEMCPY = ExportTable(("CUPTI_ACTIVITY_KIND_MEMCPY",), _columns(*_ACTIVITY, ("bytes", "bytes"), required=False))
MEMSET = ExportTable(("CUPTI_ACTIVITY_KIND_MEMSET",), _columns(*_ACTIVITY, ("bytes", "bytes"), required=False))
NVTX = ExportTable(("NVTX_EVENTS",), _columns(
    ("start_ns", "start"), ("end_ns", "end"), ("event_type", "eventType"), ("tid", "globalTid")) + _columns(
    ("text", "text", "TEXT"), ("text_id", "textId"), ("end_tid", "endGlobalTid"), ("domain_id", "domainId"),
    ("payload", "binaryData", "BLOB"), required=False))
# Whole CUDA-graph executions, one row per launched graph (nsys's --cuda-graph-trace=graph); with
# --cuda-graph-trace=node the graphs' kernels are kernel rows instead and this table is empty.
GRAPHS = ExportTable(("CUPTI_ACTIVITY_KIND_GRAPH_TRACE",), _columns(*_ACTIVITY, ("graph_id", "graphId"), required=False))
CUDA_GPUS = ExportTable(("TARGET_INFO_CUDA_GPU",), _columns(
    ("device_id", "deviceId"), ("name", "name", "TEXT"), ("sm_count", "numMultiprocessors"),
    ("memory_bytes", "globalMemorySize"), ("clock_khz", "coreClockRate")))
# Older exports' GPU table: any of its columns may be missing (read as NULL).
OLD_GPUS = ExportTable(("TARGET_INFO_GPU",), _columns(
    ("device_id", ("cuDevice", "deviceId", "id")), ("name", "name", "TEXT"), ("sm_count", "smCount"),
    ("memory_bytes", "totalMemory"), ("clock_hz", "clockRate"), required=False))
MEMORY_EVENTS = ExportTable(("CUDA_GPU_MEMORY_USAGE_EVENTS",), _columns(
    ("start_ns", "start"), ("pid", "globalPid"), ("device_id", "deviceId"), ("address", "address"),
    ("bytes", "bytes"), ("mem_kind", "memKind"), ("operation", "memoryOperationType"),
    ("correlation_id", "correlationId")))
GPU_METRICS = ExportTable(("GPU_METRICS",), _columns(
    ("time_ns", "timestamp", "INTEGER NOT NULL"), ("gpu", "typeId", "INTEGER NOT NULL"),
    ("metric_id", "metricId", "INTEGER NOT NULL"), ("value", "value")))
GPU_METRIC_NAMES = ExportTable(("TARGET_INFO_GPU_METRICS",), _columns(
    ("gpu", "typeId"), ("metric_id", "metricId"), ("metric", "metricName", "TEXT")))
# Which of nsys's GPUs (a GPU metrics sample's) each process's CUDA device is.
CUDA_DEVICES = ExportTable(("TARGET_INFO_CUDA_DEVICE",), _columns(("gpu", "gpuId"), ("device_id", "cudaId"), ("pid", "pid")))
PAYLOAD_SCHEMAS = ExportTable(("NVTX_PAYLOAD_SCHEMA_ENTRIES",), _columns(
    ("schema_id", "schemaId"), ("name", "name", "TEXT"), ("offset", "offset")))

# The environment nsys started in (one row, ``DeviceEnvironment``, of ``KEY=VALUE`` items joined
# by ``;``): read only for a launcher's rank variables (load.launcher).
SYSTEM_ENVIRONMENT = ExportTable(("TARGET_INFO_SYSTEM_ENV",), _columns(("name", "name", "TEXT"), ("value", "value", "TEXT")))
# nsys's own messages about the capture, read only to say why an export holds no kernels.
DIAGNOSTICS = ExportTable(("DIAGNOSTIC_EVENT",), _columns(("severity", "severity"), ("text", "text", "TEXT")))
TABLES = (STRINGS, METADATA, KERNELS, RUNTIME, MEMCPY, MEMSET, NVTX, GRAPHS, CUDA_GPUS, OLD_GPUS,
          MEMORY_EVENTS, GPU_METRICS, GPU_METRIC_NAMES, CUDA_DEVICES, PAYLOAD_SCHEMAS, SYSTEM_ENVIRONMENT, DIAGNOSTICS)
# Tables the analyzer never reads that this project's tools (nsys_runs) edit or drop: the GPU
# synchronizations that nsys_runs.scale_trace repeats, the capture window it extends, and what
# nsys_runs.slim drops or scrubs.
SYNCHRONIZATIONS = ExportTable(("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",), _columns(*_ACTIVITY, required=False))
ANALYSIS_DETAILS = ExportTable(("ANALYSIS_DETAILS",), _columns(
    ("start_ns", "startTime"), ("stop_ns", "stopTime"), ("duration_ns", "duration")))
OS_RUNTIME = ExportTable(("OSRT_API",), ())
OS_RUNTIME_CALLCHAINS = ExportTable(("OSRT_CALLCHAINS",), ())
PROFILER_OVERHEAD = ExportTable(("PROFILER_OVERHEAD",), ())
CAPTURE_METADATA = ExportTable(("META_DATA_CAPTURE",), _columns(("name", "name", "TEXT"), ("value", "value", "TEXT")))
TOOL_TABLES = (SYNCHRONIZATIONS, ANALYSIS_DETAILS, OS_RUNTIME, OS_RUNTIME_CALLCHAINS, PROFILER_OVERHEAD,
               CAPTURE_METADATA)
# Any of these tables tells an nsys export from another SQLite database.
MARKERS = (STRINGS, KERNELS, RUNTIME, NVTX, OLD_GPUS, CUDA_GPUS, METADATA)


def table_names(tables: tuple[ExportTable, ...] = TABLES + TOOL_TABLES) -> tuple[str, ...]:
    """Every name, current and former, of ``tables`` (by default every table of the map)."""
    return tuple(name for table in tables for name in table.names)


def nvtx_name_sql(schema: dict, alias: str = "", database: str = "") -> str:
    """The NVTX name rule as an SQL expression on a row of NVTX_EVENTS (``alias``, or unqualified):
    its ``text``, else the StringIds value of its ``textId`` (StringIds of ``database``, e.g.
    ``main``, when given); NULL when it has neither."""
    row = f"{alias}." if alias else ""
    text, text_id = NVTX.column(schema, "text"), NVTX.column(schema, "text_id")
    strings, value, key = STRINGS.in_export(schema), STRINGS.column(schema, "value"), STRINGS.column(schema, "id")
    parts = [f'{row}"{text}"'] if text else []
    if text_id and strings and value and key:
        parts.append(f'(SELECT "{value}" FROM {database + "." if database else ""}{strings} '
                     f'WHERE "{key}" = {row}"{text_id}")')
    return f"coalesce({', '.join(parts)})" if len(parts) > 1 else (parts[0] if parts else "NULL")


def nvtx_names(text, text_ids, strings) -> np.ndarray:
    """The NVTX name rule on columns already read: ``text`` where it is not null, else the
    registered string of ``text_ids`` (``strings``: the export's
    :class:`~analysis.load.tables.StringTable`); None where there is neither."""
    import numpy as np
    import pandas as pd

    text = np.asarray(text, dtype=object)
    return np.where(pd.isna(text), strings.lookup(text_ids), text)
