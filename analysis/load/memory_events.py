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
from analysis.load.schema import MISSING, RUNTIME_TABLE, int_column, read_schema
from analysis.load.tables import MAX_TIME_NS, drop_repeats, keep_rows, pid_column, process_of, tid_of

MEMORY_EVENTS_TABLE = "CUDA_GPU_MEMORY_USAGE_EVENTS"
MEMORY_EVENT_COLUMNS = ("start", "globalPid", "deviceId", "address", "bytes", "memKind",
                        "memoryOperationType", "correlationId")
ALLOCATION, DEALLOCATION = 0, 1  # ENUM_CUDA_DEV_MEM_EVENT_OPER
MAX_BYTES = 1 << 50  # 1 PiB: no GPU allocation is larger; a larger size is a damaged row


def read_memory_events(path: str | os.PathLike, inputs: InputCache = InputCache(),
                       notes: list[str] | None = None, shared_pids: tuple[int, ...] = ()) -> pd.DataFrame | None:
    """The memory events of a trace, in time order; None when it has no such table.

    Columns: ``start_ns`` (0 for events from before the capture), ``pid``, ``device_id``,
    ``address``, ``bytes``, ``mem_kind``, ``is_alloc`` (bool), ``api_start_ns`` and ``tid``
    (the runtime call with the same correlationId in the same process; -1 when none). ``pid`` is
    as the loaded trace's (``shared_pids``: its :attr:`~analysis.load.trace.Trace.shared_pids`).

    Events no allocator makes are left out, with a note in ``notes`` counting them: a time,
    address or size that is missing, not an integer or negative, a size past :data:`MAX_BYTES`,
    an operation other than allocation or free; so are later copies of an event listed twice.
    """
    with opened_input(Path(path), inputs) as database, connect_readonly(database) as conn:
        schema = read_schema(conn, (MEMORY_EVENTS_TABLE, RUNTIME_TABLE))
        columns = schema.get(MEMORY_EVENTS_TABLE, {})
        if not set(MEMORY_EVENT_COLUMNS) <= set(columns):
            return None
        raw = _read(conn, RUNTIME_TABLE in schema)
    notes = [] if notes is None else notes
    raw = drop_repeats(raw, list(MEMORY_EVENT_COLUMNS), notes, "memory events")
    usable = ((raw["start"] >= 0) & (raw["start"] < MAX_TIME_NS) & (raw["address"] >= 0) & (raw["bytes"] >= 0)
              & (raw["bytes"] <= MAX_BYTES) & raw["memoryOperationType"].isin((ALLOCATION, DEALLOCATION)))
    raw = keep_rows(raw, usable.to_numpy(), notes, "memory events whose time, address or size is missing, "
                    "not an integer, negative or past 1 PiB, or whose operation is neither an allocation nor a free")
    raw = keep_rows(raw, ~_orphan_frees(raw), notes, "memory events that free an address no earlier event allocated")
    events = pd.DataFrame({
        "start_ns": raw["start"],
        "pid": pid_column(process_of(raw["globalPid"]), shared_pids),
        "device_id": raw["deviceId"],
        "address": raw["address"],
        "bytes": raw["bytes"],
        "mem_kind": raw["memKind"],
        "is_alloc": raw["memoryOperationType"] == ALLOCATION,
        "api_start_ns": raw["api_start"],
        "tid": np.where(raw["api_tid"] >= 0, tid_of(np.maximum(raw["api_tid"], 0)), -1),
    })
    return events.sort_values(["start_ns", "api_start_ns"], kind="stable", ignore_index=True)


def _orphan_frees(raw: pd.DataFrame) -> np.ndarray:
    """Frees of an address that no event before them allocated (its allocation was left out):
    counted, they would make a block's memory shrink by bytes it never had."""
    is_alloc = (raw["memoryOperationType"] == ALLOCATION).to_numpy()
    order = np.lexsort((np.arange(len(raw)), raw["start"].to_numpy(), raw["address"].to_numpy()))
    allocated_before = pd.Series(is_alloc[order]).groupby(raw["address"].to_numpy()[order]).cumsum().to_numpy()
    orphan = np.zeros(len(raw), dtype=bool)
    orphan[order] = ~is_alloc[order] & (allocated_before == 0)
    return orphan


def _read(conn: sqlite3.Connection, has_runtime: bool) -> pd.DataFrame:
    """The events joined to their runtime call, as integer columns (:data:`MISSING` for NULL or
    a value that is not an integer); a call listed twice joins an event once."""
    selected = ", ".join(f"coalesce(m.{c}, {MISSING})" for c in MEMORY_EVENT_COLUMNS)
    if has_runtime:
        calls = (f"SELECT correlationId, globalTid >> 24 AS process, min(start) AS start, min(globalTid) AS tid "
                 f"FROM {RUNTIME_TABLE} GROUP BY correlationId, process")
        query = (f"SELECT {selected}, coalesce(r.start, {MISSING}), coalesce(r.tid, {MISSING}) "
                 f"FROM {MEMORY_EVENTS_TABLE} m LEFT JOIN ({calls}) r "
                 "ON r.correlationId = m.correlationId AND r.process = (m.globalPid >> 24)")
    else:
        query = f"SELECT {selected}, {MISSING}, {MISSING} FROM {MEMORY_EVENTS_TABLE} m"
    rows = np.array(conn.execute(query).fetchall(), dtype=object).reshape(-1, len(MEMORY_EVENT_COLUMNS) + 2)
    names = (*MEMORY_EVENT_COLUMNS, "api_start", "api_tid")
    return pd.DataFrame({name: int_column(rows[:, i]) for i, name in enumerate(names)})
