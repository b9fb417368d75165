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
message for send and receive.

**Which kernel a call belongs to.** A call's kernel is the first NCCL kernel launched on the
call's thread at or after the call started: a collective launches its kernel inside its own
range, a group (``ncclGroupStart`` ... ``ncclGroupEnd``) launches one kernel at its end for all
its calls. A kernel's bytes are the sum over its calls of its own collective; for send/recv
kernels, over the ``ncclSend`` calls only (bytes sent).
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load.input_cache import InputCache
from analysis.load.inputs import connect_readonly, opened_input
from analysis.load.schema import NVTX_PUSH_POP, NVTX_START_END, NVTX_TABLE, int_column, read_schema
from analysis.load.tables import pid_column, process_of, tid_of

MESSAGE_SIZE_ENTRY = "Message size [bytes]"
HEADER = struct.Struct("<IIIIQQ")
SIZE = struct.Struct("<Q")
NVTX_RANGES = NVTX_PUSH_POP + NVTX_START_END
SCHEMA_ENTRIES = "NVTX_PAYLOAD_SCHEMA_ENTRIES"
CALL_COLUMNS = ["pid", "tid", "start_ns", "call", "bytes"]


def read_message_sizes(path: Path, inputs: InputCache = InputCache(), shared_pids: tuple[int, ...] = ()) -> pd.DataFrame:
    """The NCCL calls of an export with a message size: ``pid, tid, start_ns, call`` (the range
    name, e.g. ``ncclAllReduce``), ``bytes``; empty when the export holds no such payloads. ``pid``
    is as the loaded trace's (``shared_pids``: its :attr:`~analysis.load.trace.Trace.shared_pids`);
    a start or thread that is not an integer reads as -1."""
    with opened_input(Path(path), inputs) as database, connect_readonly(database) as conn:
        schema = read_schema(conn)
        if "binaryData" not in schema.get(NVTX_TABLE, {}) or \
                not {"schemaId", "name", "offset"} <= set(schema.get(SCHEMA_ENTRIES, {})):
            return pd.DataFrame(columns=CALL_COLUMNS)
        offsets = dict(conn.execute(
            f'SELECT DISTINCT schemaId, COALESCE("offset", 0) FROM {SCHEMA_ENTRIES} WHERE name = ?',
            (MESSAGE_SIZE_ENTRY,)))
        name = "COALESCE(e.text, s.value)" if "text" in schema[NVTX_TABLE] else "s.value"
        rows = conn.execute(
            f"SELECT e.start, e.globalTid, {name}, e.binaryData FROM {NVTX_TABLE} e "
            "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.binaryData IS NOT NULL "
            f"AND e.eventType IN {NVTX_RANGES}").fetchall()
    calls = [(start, tid, call, size) for start, tid, call, blob in rows
             if (size := message_size(blob, offsets)) is not None]
    if not calls:
        return pd.DataFrame(columns=CALL_COLUMNS)
    start, global_tid, call, size = zip(*calls)
    global_tid = int_column(global_tid)
    return pd.DataFrame({"pid": pid_column(process_of(global_tid), shared_pids), "tid": tid_of(global_tid),
                         "start_ns": int_column(start), "call": np.array(call).astype(str),
                         "bytes": np.array(size, dtype=np.int64)})


def message_size(blob, offsets: dict[int, int]) -> int | None:
    """The message size in one ``binaryData`` payload, or None when it holds none we can read."""
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) < HEADER.size:
        return None
    schema = HEADER.unpack_from(blob)[2]
    offset = offsets.get(schema)
    if offset is None or len(blob) < HEADER.size + offset + SIZE.size:
        return None
    return SIZE.unpack_from(blob, HEADER.size + offset)[0]


def kernel_bytes(kernels: pd.DataFrame, calls: pd.DataFrame) -> np.ndarray:
    """Bytes of each communication kernel, by the rule in the module docstring; -1 where no call
    with a size belongs to the kernel. ``kernels`` and ``calls`` both carry a ``collective``
    column (``""`` for compute kernels)."""
    result = np.full(len(kernels), -1, dtype=np.int64)
    comm = (kernels["collective"] != "").to_numpy()
    if not len(calls) or not comm.any():
        return result
    calls = calls[(calls["collective"] != "send_recv") | calls["call"].str.contains("Send")]
    collective = calls["collective"].to_numpy()
    rows = np.flatnonzero(comm)
    launch_groups = kernels.iloc[rows].groupby(["pid", "launch_tid"]).indices
    for (pid, tid), call_rows in calls.groupby(["pid", "tid"]).indices.items():
        kernel_rows = launch_groups.get((pid, tid))
        if kernel_rows is None:
            continue
        kernel_rows = rows[kernel_rows]
        kernel_rows = kernel_rows[np.argsort(kernels["launch_start_ns"].to_numpy()[kernel_rows])]
        launches = kernels["launch_start_ns"].to_numpy()[kernel_rows]
        owner = np.searchsorted(launches, calls["start_ns"].to_numpy()[call_rows], side="left")
        ok = owner < len(kernel_rows)
        owner_rows = kernel_rows[owner[ok]]
        same = collective[call_rows[ok]] == np.asarray(kernels["collective"].array[owner_rows], dtype=object)
        sizes = calls["bytes"].to_numpy()[call_rows[ok]][same]
        np.maximum.at(result, owner_rows[same], 0)
        np.add.at(result, owner_rows[same], sizes)
    return result
