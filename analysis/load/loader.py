"""``load_trace``: open an nsys SQLite export read-only and turn it into a few tidy tables (:class:`Trace`).

What the rest of the analyzer may rely on (see docs/architecture.md for the column lists):

* every table is sorted by time here, because nsys does not promise any row order;
* columns that an export lacks are checked for before any query is written, so old and new
  schemas load through the same code;
* process and thread ids are masked out of nsys's ``globalTid`` (``<HW:8><VM:8><PID:24><TID:24>``);
* the input file is never written: SQLite opens it with ``mode=ro&immutable=1`` and compressed
  inputs are decompressed into a cache folder, not beside the input.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load.errors import NoKernels, NoLaunchCalls, NotNsysExport, TruncatedTrace
from analysis.load.export_map import DIAGNOSTICS, GRAPHS, KERNELS, MARKERS, MEMORY_EVENTS, table_names
from analysis.load.gpu_metrics import read_cuda_devices, read_gpu_metrics
from analysis.load.input_cache import InputCache
from analysis.load.inputs import connect_readonly, opened_input
from analysis.load.launcher import read_launcher_rank
from analysis.load.launches import LaunchCalls, join_launch_calls
from analysis.load.memory_events import read_memory_events
from analysis.load.nccl_payloads import read_message_sizes
from analysis.load.nvtx import RangeFilter, marks_of, ranges_of, read_gemm_ops, read_nvtx
from analysis.load.progress import stage
from analysis.load.schema import (
    count_rows,
    export_metadata,
    has_rows,
    read_schema,
    require_columns,
    require_tables_are_tables,
)
from analysis.load.tables import (
    GRAPH_EXECUTION,
    ID_MASK,
    UNNAMED_KERNEL,
    StringTable,
    appended,
    drop_unusable_times,
    in_time_order,
    latest_end,
    pid_column,
    read_gpus,
    read_graph_executions,
    read_kernels,
    read_memops,
    shared_pids,
    with_columns,
    with_durations,
)
from analysis.load.trace import Trace


def load_trace(path: str | os.PathLike, ranges: RangeFilter | None = None,
               inputs: InputCache = InputCache()) -> Trace:
    """Load an nsys export (``.sqlite``, ``.sqlite.xz`` or ``.nsys-rep`` with nsys on PATH);
    ``inputs`` says how compressed and report inputs are copied (:mod:`analysis.load.input_cache`).

    Raises a :class:`~analysis.load.errors.TraceError` subclass, whose message is one line, for
    anything that is not a usable nsys export. With ``ranges`` only the NVTX ranges it names are
    read (marks always are; every range when the export has memory events). The export is opened
    once: the optional tables (memory events, GPU metrics, NCCL calls) are read from the same
    connection onto the trace.
    """
    path = Path(path)
    with opened_input(path, inputs) as database:
        try:
            try:
                with connect_readonly(database) as conn:
                    return _read_trace(conn, path, ranges)
            except sqlite3.OperationalError as err:
                if "decode" not in str(err):
                    raise
            with connect_readonly(database, lenient_text=True) as conn:
                return _read_trace(conn, path, ranges)
        except sqlite3.DatabaseError as err:
            raise TruncatedTrace(f"the SQLite file is damaged or cut short ({err})") from err


def require_claimable_kernels(trace: Trace) -> None:
    """Refuse a trace with NVTX ranges but no kernel tied to a launch call: no range can claim any
    kernel, so every per-range figure would be empty."""
    if len(trace.ranges) and len(trace.kernels) and (trace.kernels["launch_start_ns"] < 0).all():
        raise NoLaunchCalls(
            f"none of its {len(trace.kernels):,} kernels has a launch call (same correlationId, same process) "
            "among its CUDA runtime/driver API records, so no NVTX range can claim them; capture with `-t cuda,nvtx`")


# The diagnostics' severity levels that are warnings or errors (ENUM_DIAGNOSTIC_SEVERITY_LEVEL).
WARNING_LEVELS = (2, 3)
CUDA_DIAGNOSTICS_SHOWN = 3


def cuda_diagnostics(conn: sqlite3.Connection, schema: dict) -> list[str]:
    """nsys's own warnings and errors about CUDA in the capture (a driver it does not support, no
    CUDA events collected), each once, at most :data:`CUDA_DIAGNOSTICS_SHOWN`: they say why an
    export holds no kernels."""
    table, severity, text = DIAGNOSTICS.in_export(schema), DIAGNOSTICS.column(schema, "severity"), \
        DIAGNOSTICS.column(schema, "text")
    if table is None or severity is None or text is None:
        return []
    rows = conn.execute(f'SELECT "{text}" FROM {table} WHERE "{severity}" IN {WARNING_LEVELS} AND "{text}" LIKE ? '
                        "ORDER BY rowid", ("%CUDA%",)).fetchall()
    said = dict.fromkeys(" ".join(str(row[0]).split()) for row in rows)
    return list(said)[:CUDA_DIAGNOSTICS_SHOWN]


def _read_trace(conn: sqlite3.Connection, path: Path, ranges: RangeFilter | None) -> Trace:
    schema = read_schema(conn)
    require_tables_are_tables(conn)
    if not any(table in schema for table in table_names(MARKERS)):
        listed = ", ".join(sorted(schema)[:4]) or "none"
        raise NotNsysExport(f"is an SQLite database but not an nsys export (tables: {listed})")
    meta = export_metadata(conn, schema)
    version = meta.get("EXPORT_PRODUCT_VERSION")
    graph_launches = count_rows(conn, schema, GRAPHS)
    has_kernels = has_rows(conn, schema, KERNELS)
    if not has_kernels and not graph_launches:
        said = cuda_diagnostics(conn, schema)
        raise NoKernels("has no CUDA kernel records (was it captured with `-t cuda`, and did the program launch "
                        "kernels?)" + ("; nsys said: " + " ".join(f"“{text}”" for text in said) if said else ""))
    stage(f"{path.name}: reading kernels")
    strings = StringTable(conn, schema)
    notes: list[str] = []
    # Whole CUDA-graph executions (a graph traced as one record) are kernel rows of their own.
    kernel_tables = [read_graph_executions(conn, schema)] if graph_launches else []
    if has_kernels:
        require_columns(schema, KERNELS, version)
        kernel_tables.insert(0, read_kernels(conn, schema, strings))
    kernels = drop_unusable_times(kernel_tables[0] if len(kernel_tables) == 1 else appended(*kernel_tables),
                                  "kernels", notes)
    del kernel_tables
    if kernels.empty:
        raise NoKernels("has no kernel with a usable start and end time (all are missing, negative or reversed)")
    unnamed = int((kernels["demangled_name"] == UNNAMED_KERNEL).sum())
    if unnamed:
        notes.append(f"{unnamed:,} kernels have no name in the trace; they are listed as {UNNAMED_KERNEL}")
    memops = drop_unusable_times(read_memops(conn, schema), "memory copies and fills", notes)
    # Durations in place of ends from here on: 4 bytes an op instead of 8, before the launch join's peak;
    # in time order before the join too, so a table sorted is never held beside the join's arrays.
    kernels, memops = with_durations(kernels), with_durations(memops)
    kernels, memops = in_time_order(kernels), in_time_order(memops)  # each moved column by column, once bound alone
    stage(f"{path.name}: reading launch calls")
    (kernels, memops), calls = join_launch_calls(conn, schema, strings, version, [kernels, memops])
    unlinked = int((kernels["launch_start_ns"] < 0).sum())
    if unlinked:
        notes.append(f"{unlinked:,} of {len(kernels):,} kernels have no launch call in the trace "
                     "(launched before the capture began?); no NVTX range can claim them")

    if ranges is not None and has_rows(conn, schema, MEMORY_EVENTS):
        # The memory ledger charges each allocation to the op range around its call and finds a
        # block's backward by its autograd nodes' ranges: with tensor-level memory events every
        # range is read.
        ranges = None
    stage(f"{path.name}: reading NVTX ranges")
    events = read_nvtx(conn, schema, strings, ranges)
    gemm_ops = read_gemm_ops(conn, schema, strings)
    shared, (kernels, memops, events, gemm_ops, host_calls) = _name_processes(
        (kernels, memops, events, gemm_ops, calls.host_calls), calls.processes, notes)
    start_ns, end_ns = _capture_window((kernels, memops, events), calls)
    ranges = ranges_of(events, end_ns, notes)
    marks = marks_of(events)
    if graph_launches:
        notes.append(f"{graph_launches:,} CUDA-graph launches were traced as whole graphs (nsys's "
                     f"--cuda-graph-trace=graph): each counts as one kernel, {GRAPH_EXECUTION.format('<graphId>')}, "
                     "whose time is the whole graph's; the kernels inside are not listed one by one "
                     "(profile with --cuda-graph-trace=node to see them)")
    # The optional tables, from the same connection: their notes (rows left out) wait on the trace
    # for the summary to place them (Trace.optional_table).
    table_notes: dict[str, list[str]] = {"memory_events": [], "gpu_metrics": []}
    stage(f"{path.name}: reading the other tables")
    return Trace(
        path=path, nsys_version=version, schema_version=meta.get("EXPORT_SCHEMA_VERSION"),
        kernels=kernels, memops=memops, ranges=ranges, marks=marks,
        gpus=read_gpus(conn, schema), capture_start_ns=start_ns,
        capture_end_ns=end_ns, cuda_graph_launches=graph_launches, notes=notes, shared_pids=shared,
        gemm_ops=gemm_ops,
        memory_events=read_memory_events(conn, schema, table_notes["memory_events"], shared),
        gpu_metrics=read_gpu_metrics(conn, schema, table_notes["gpu_metrics"]), cuda_devices=read_cuda_devices(conn, schema),
        nccl_calls=read_message_sizes(conn, schema, strings, shared), launcher_rank=read_launcher_rank(conn, schema),
        host_calls=host_calls, table_notes=table_notes)


def _name_processes(tables: tuple[pd.DataFrame, ...], call_processes: np.ndarray, notes: list[str]
                    ) -> tuple[tuple[int, ...], tuple[pd.DataFrame, ...]]:
    """``tables`` (read with whole process keys, joined as such) with ``pid`` columns that show
    what :func:`~analysis.load.tables.pid_column` shows, each new column joining its table
    without a copy (:func:`~analysis.load.tables.with_columns`) and a table whose keys are pids
    already (one host) kept as it is; a note says when processes on different hosts share a pid
    and are shown by their whole key. Returns those shared pids (the trace's ``shared_pids``, for
    readers of its other tables) and the tables."""
    shared = shared_pids(call_processes, *(table["pid"] for table in tables))
    if len(shared):
        notes.append(f"processes on different hosts share pid {', '.join(map(str, shared))}; they are told apart "
                     "by the host bits of nsys's globalPid and shown by that whole id (globalPid >> 24)")
    named = []
    for table in tables:
        keys = table["pid"].to_numpy()
        shown_as_is = not len(keys) or (0 <= keys.min() and keys.max() <= ID_MASK)
        named.append(table if shown_as_is else with_columns(table, pid=pid_column(keys, shared)))
    return tuple(int(pid) for pid in shared), tuple(named)


def _capture_window(tables: tuple[pd.DataFrame, ...], calls: LaunchCalls) -> tuple[int, int]:
    """The first and last time of the trace's ops, NVTX events and API calls read."""
    starts = [int(t["start_ns"].min()) for t in tables if len(t)]
    ends = [int(times.max()) for t in tables if len(t) for c in ("start_ns", "end_ns") if c in t
            for times in [_numbers(t[c])] if times.notna().any()]
    ends += [latest_end(t) for t in tables if len(t) and "dur_ns" in t]  # the ops: start plus duration
    if calls.any_read:
        starts.append(calls.first_start_ns)
        ends.append(calls.last_start_ns)
    start_ns, end_ns = min(starts), max(ends)
    return start_ns, max(end_ns, calls.last_end_ns) if calls.any_read else end_ns


def _numbers(column: pd.Series) -> pd.Series:
    """``column`` as numbers: itself when it holds numbers (``pd.to_numeric`` would copy millions of
    rows), else converted."""
    return column if pd.api.types.is_numeric_dtype(column) else pd.to_numeric(column)
