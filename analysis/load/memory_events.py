"""Nsight's tensor-level memory events (``CUDA_GPU_MEMORY_USAGE_EVENTS``, recorded with
``--cuda-memory-usage=true`` and the cudaMallocAsync allocator), each joined to the runtime call
that made it (same ``correlationId`` and process) for the calling thread.

An optional table: :func:`read_memory_events` returns None when the export lacks it.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load.input_cache import InputCache
from analysis.load.inputs import connect_readonly, opened_input
from analysis.load.schema import RUNTIME_TABLE, read_schema
from analysis.load.tables import pid_of, tid_of

MEMORY_EVENTS_TABLE = "CUDA_GPU_MEMORY_USAGE_EVENTS"
MEMORY_EVENT_COLUMNS = ("start", "globalPid", "deviceId", "address", "bytes", "memKind",
                        "memoryOperationType", "correlationId")
ALLOCATION, DEALLOCATION = 0, 1  # ENUM_CUDA_DEV_MEM_EVENT_OPER


def read_memory_events(path: str | os.PathLike, inputs: InputCache = InputCache()) -> pd.DataFrame | None:
    """The memory events of a trace, in time order; None when it has no such table.

    Columns: ``start_ns`` (0 for events from before the capture), ``pid``, ``device_id``,
    ``address``, ``bytes``, ``mem_kind``, ``is_alloc`` (bool), ``api_start_ns`` and ``tid``
    (the runtime call with the same correlationId in the same process; -1 when none).
    """
    with opened_input(Path(path), inputs) as database, connect_readonly(database) as conn:
        schema = read_schema(conn, (MEMORY_EVENTS_TABLE, RUNTIME_TABLE))
        columns = schema.get(MEMORY_EVENTS_TABLE, {})
        if not set(MEMORY_EVENT_COLUMNS) <= set(columns):
            return None
        return _read(conn, RUNTIME_TABLE in schema)


def _read(conn: sqlite3.Connection, has_runtime: bool) -> pd.DataFrame:
    selected = ", ".join(f"m.{c}" for c in MEMORY_EVENT_COLUMNS)
    if has_runtime:
        query = (f"SELECT {selected}, r.start AS api_start, r.globalTid AS api_tid FROM {MEMORY_EVENTS_TABLE} m "
                 f"LEFT JOIN {RUNTIME_TABLE} r ON r.correlationId = m.correlationId "
                 "AND (r.globalTid >> 24) = (m.globalPid >> 24)")
    else:
        query = f"SELECT {selected}, NULL AS api_start, NULL AS api_tid FROM {MEMORY_EVENTS_TABLE} m"
    raw = pd.read_sql_query(query, conn)
    global_pid = raw["globalPid"].fillna(0).astype(np.int64).to_numpy()
    api_tid = raw["api_tid"].fillna(-1).astype(np.int64).to_numpy()
    events = pd.DataFrame({
        "start_ns": raw["start"].astype(np.int64),
        "pid": pid_of(global_pid),
        "device_id": raw["deviceId"].fillna(-1).astype(np.int64),
        "address": raw["address"].astype(np.int64),
        "bytes": raw["bytes"].astype(np.int64),
        "mem_kind": raw["memKind"].fillna(-1).astype(np.int64),
        "is_alloc": raw["memoryOperationType"] == ALLOCATION,
        "api_start_ns": raw["api_start"].fillna(-1).astype(np.int64),
        "tid": np.where(api_tid >= 0, tid_of(np.maximum(api_tid, 0)), -1),
    })
    return events.sort_values(["start_ns", "api_start_ns"], kind="stable", ignore_index=True)
