"""Nsight's tensor-level memory events (``CUDA_GPU_MEMORY_USAGE_EVENTS``, recorded with
``--cuda-memory-usage=true`` and the cudaMallocAsync allocator), each joined to the runtime call
that made it (same ``correlationId`` and process) for the calling thread.

An optional table: :func:`read_memory_events` returns None when the export lacks it.
"""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd

from analysis.load.export_map import MEMORY_EVENTS, RUNTIME
from analysis.load.schema import MISSING, int_column
from analysis.load.tables import MAX_TIME_NS, drop_repeats, keep_rows, pid_column, process_of, tid_of

MEMORY_EVENT_COLUMNS = tuple(column.tidy for column in MEMORY_EVENTS.columns)
ALLOCATION, DEALLOCATION = 0, 1  # ENUM_CUDA_DEV_MEM_EVENT_OPER
MAX_BYTES = 1 << 50  # 1 PiB: no GPU allocation is larger; a larger size is a damaged row


def read_memory_events(conn: sqlite3.Connection, schema: dict, notes: list[str],
                       shared_pids: tuple[int, ...] = ()) -> pd.DataFrame | None:
    """The memory events of an open export (``schema``: :func:`analysis.load.schema.read_schema`),
    in time order; None when it has no such table.

    Columns: ``start_ns`` (0 for events from before the capture), ``pid``, ``device_id``,
    ``address``, ``bytes``, ``mem_kind``, ``is_alloc`` (bool), ``api_start_ns`` and ``tid``
    (the runtime call with the same correlationId in the same process; -1 when none). ``pid`` is
    as the loaded trace's (``shared_pids``: its :attr:`~analysis.load.trace.Trace.shared_pids`).

    Events no allocator makes are left out, with a note in ``notes`` counting them: a time,
    address or size that is missing, not an integer or negative, a size past :data:`MAX_BYTES`,
    an operation other than allocation or free; so are later copies of an event listed twice.
    """
    if any(MEMORY_EVENTS.column(schema, column) is None for column in MEMORY_EVENT_COLUMNS):
        return None
    raw = _read(conn, schema)
    raw = drop_repeats(raw, list(MEMORY_EVENT_COLUMNS), notes, "memory events")
    usable = ((raw["start_ns"] >= 0) & (raw["start_ns"] < MAX_TIME_NS) & (raw["address"] >= 0) & (raw["bytes"] >= 0)
              & (raw["bytes"] <= MAX_BYTES) & raw["operation"].isin((ALLOCATION, DEALLOCATION)))
    raw = keep_rows(raw, usable.to_numpy(), notes, "memory events whose time, address or size is missing, "
                    "not an integer, negative or past 1 PiB, or whose operation is neither an allocation nor a free")
    raw = keep_rows(raw, ~_orphan_frees(raw), notes, "memory events that free an address no earlier event allocated")
    events = pd.DataFrame({
        "start_ns": raw["start_ns"],
        "pid": pid_column(process_of(raw["pid"]), shared_pids),
        "device_id": raw["device_id"],
        "address": raw["address"],
        "bytes": raw["bytes"],
        "mem_kind": raw["mem_kind"],
        "is_alloc": raw["operation"] == ALLOCATION,
        "api_start_ns": raw["api_start"],
        "tid": np.where(raw["api_tid"] >= 0, tid_of(np.maximum(raw["api_tid"], 0)), -1),
    })
    return events.sort_values(["start_ns", "api_start_ns"], kind="stable", ignore_index=True)


def _orphan_frees(raw: pd.DataFrame) -> np.ndarray:
    """Frees of an address that no event before them allocated (its allocation was left out):
    counted, they would make a block's memory shrink by bytes it never had."""
    is_alloc = (raw["operation"] == ALLOCATION).to_numpy()
    order = np.lexsort((np.arange(len(raw)), raw["start_ns"].to_numpy(), raw["address"].to_numpy()))
    allocated_before = pd.Series(is_alloc[order]).groupby(raw["address"].to_numpy()[order]).cumsum().to_numpy()
    orphan = np.zeros(len(raw), dtype=bool)
    orphan[order] = ~is_alloc[order] & (allocated_before == 0)
    return orphan


def _read(conn: sqlite3.Connection, schema: dict) -> pd.DataFrame:
    """The events joined to their runtime call, as integer columns (:data:`MISSING` for NULL or
    a value that is not an integer); a call listed twice joins an event once."""
    event = {tidy: f'm."{MEMORY_EVENTS.column(schema, tidy)}"' for tidy in MEMORY_EVENT_COLUMNS}
    selected = ", ".join(f"coalesce({event[c]}, {MISSING})" for c in MEMORY_EVENT_COLUMNS)
    events = MEMORY_EVENTS.in_export(schema)
    if RUNTIME.in_export(schema) is not None:
        correlation, call_tid, call_start = RUNTIME.nsys_names(schema, ("correlation_id", "tid", "start_ns"))
        calls = (f"SELECT {correlation} AS correlationId, {call_tid} >> 24 AS process, min({call_start}) AS start, "
                 f"min({call_tid}) AS tid FROM {RUNTIME.in_export(schema)} GROUP BY correlationId, process")
        query = (f"SELECT {selected}, coalesce(r.start, {MISSING}), coalesce(r.tid, {MISSING}) "
                 f"FROM {events} m LEFT JOIN ({calls}) r "
                 f"ON r.correlationId = {event['correlation_id']} AND r.process = ({event['pid']} >> 24)")
    else:
        query = f"SELECT {selected}, {MISSING}, {MISSING} FROM {events} m"
    rows = np.array(conn.execute(query).fetchall(), dtype=object).reshape(-1, len(MEMORY_EVENT_COLUMNS) + 2)
    names = (*MEMORY_EVENT_COLUMNS, "api_start", "api_tid")  # tidy names
    return pd.DataFrame({name: int_column(rows[:, i]) for i, name in enumerate(names)})
