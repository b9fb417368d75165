"""Message sizes of NCCL calls, read from the typed NVTX payloads NCCL attaches to its API ranges.

NCCL built with NVTX wraps each API call (``ncclAllReduce``, ``ncclAllGather``, ``ncclSend``, ...)
in a push/pop range of its own domain and attaches a payload whose layout is a schema of the
export's ``NVTX_PAYLOAD_SCHEMA_ENTRIES`` (entry ``Message size [bytes]`` at a byte offset). nsys
writes the payload to ``NVTX_EVENTS.binaryData`` after a 32-byte header: uint32 domain id, uint32,
uint32 schema id, uint32, uint64 payload size, uint64 total size (little-endian). A payload whose
header names no schema with a message-size entry, or that is too short, is skipped; exports
without payloads give no sizes, and the figures that need them stay null.

NCCL's message size is the buffer of one rank: the whole buffer for all-reduce and broadcast,
one rank's part for all-gather (its send buffer) and reduce-scatter (its receive buffer), the
message for send and receive. Which kernel a call belongs to is decided above the loader
(:mod:`analysis.trace.multi_gpu.nccl_payloads`).
"""
from __future__ import annotations

import sqlite3
import struct

import numpy as np
import pandas as pd

from analysis.load.export_map import NVTX, PAYLOAD_SCHEMAS, nvtx_names
from analysis.load.schema import NVTX_PUSH_POP, NVTX_START_END, int_column
from analysis.load.tables import StringTable, pid_column, process_of, tid_of

MESSAGE_SIZE_ENTRY = "Message size [bytes]"
HEADER = struct.Struct("<IIIIQQ")
SIZE = struct.Struct("<Q")
NVTX_RANGES = NVTX_PUSH_POP + NVTX_START_END
CALL_COLUMNS = ["pid", "tid", "start_ns", "call", "bytes"]


def read_message_sizes(conn: sqlite3.Connection, schema: dict, strings: StringTable,
                       shared_pids: tuple[int, ...] = ()) -> pd.DataFrame:
    """The NCCL calls of an open export with a message size: ``pid, tid, start_ns, call`` (the range
    name, e.g. ``ncclAllReduce``), ``bytes``; empty when the export holds no such payloads. ``pid``
    is as the loaded trace's (``shared_pids``: its :attr:`~analysis.load.trace.Trace.shared_pids`);
    a start or thread that is not an integer reads as -1."""
    payload = NVTX.column(schema, "payload")
    entries = PAYLOAD_SCHEMAS.in_export(schema)
    if payload is None or any(PAYLOAD_SCHEMAS.column(schema, c) is None for c in ("schema_id", "name", "offset")):
        return pd.DataFrame(columns=CALL_COLUMNS)
    schema_id, name, offset = PAYLOAD_SCHEMAS.nsys_names(schema, ("schema_id", "name", "offset"))
    offsets = dict(conn.execute(
        f'SELECT DISTINCT "{schema_id}", COALESCE("{offset}", 0) FROM {entries} WHERE "{name}" = ?',
        (MESSAGE_SIZE_ENTRY,)))
    if not offsets:  # no payload schema holds a message size: no NVTX row needs reading
        return pd.DataFrame(columns=CALL_COLUMNS)
    start, tid, event_type = NVTX.nsys_names(schema, ("start_ns", "tid", "event_type"))
    text, text_id = (NVTX.column(schema, c) or "NULL" for c in ("text", "text_id"))
    rows = conn.execute(
        f"SELECT {start}, {tid}, {text}, {text_id}, {payload} FROM {NVTX.in_export(schema)} "
        f"WHERE {payload} IS NOT NULL AND {event_type} IN {NVTX_RANGES}").fetchall()
    kept = [(*row[:4], size) for row in rows if (size := message_size(row[4], offsets)) is not None]
    if not kept:
        return pd.DataFrame(columns=CALL_COLUMNS)
    starts, global_tid, texts, text_ids, sizes = zip(*kept)
    global_tid = int_column(global_tid)
    calls = nvtx_names(texts, int_column(text_ids), strings)
    return pd.DataFrame({"pid": pid_column(process_of(global_tid), shared_pids), "tid": tid_of(global_tid),
                         "start_ns": int_column(starts), "call": np.array(calls).astype(str),
                         "bytes": np.array(sizes, dtype=np.int64)})


def message_size(blob, offsets: dict[int, int]) -> int | None:
    """The message size in one ``binaryData`` payload, or None when it holds none we can read."""
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) < HEADER.size:
        return None
    schema = HEADER.unpack_from(blob)[2]
    offset = offsets.get(schema)
    if offset is None or len(blob) < HEADER.size + offset + SIZE.size:
        return None
    return SIZE.unpack_from(blob, HEADER.size + offset)[0]
