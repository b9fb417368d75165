"""The launch join: each kernel's, copy's and fill's launching API call (the runtime or driver call
with the same correlationId in the same process), found while the calls are read.

A PyTorch trace has about one launch call per kernel, so holding the calls whole beside the
kernels would be the load's largest table. Instead the ops' join keys are sorted once, and the API
call table is read a chunk at a time (:func:`analysis.load.schema.stream_columns`): each chunk's
calls are looked up among the ops' keys, and the calls' start and thread are written into the
ops' columns there. Of the calls themselves only what the load reads later is kept
(:class:`LaunchCalls`: their processes, the span of their times, and the program's calls that
tell what it measures, read in the same pass).
"""
from __future__ import annotations

import re
import sqlite3
import threading
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.load.export_map import RUNTIME
from analysis.load.schema import require_columns, stream_columns
from analysis.load.tables import (
    HOST_CALL_API,
    ID_MASK,
    JOIN_CHUNK_OPS,
    StringTable,
    distinct_keys,
    host_calls_of,
    with_columns,
)

# API calls that put work on the GPU: kernel and graph launches, copies, fills.
LAUNCH_API = re.compile(r"Launch|Memcpy|Memset|memcpy|memset")
# No slice of the call table has claimed an op yet (:attr:`LaunchJoin.claimed`).
UNCLAIMED = np.iinfo(np.int8).max
# Bits of a packed sort entry (:class:`LaunchJoin`): a key above an op's row in a non-negative int64.
PACKED_BITS = 63


@dataclass(frozen=True)
class LaunchCalls:
    """What the load keeps of the API calls read by the join: their whole process keys (globalTid
    >> 24, distinct), the earliest and latest call start (NULL as -1), the latest call end (None
    without calls), and the program's profiler calls, waits for the GPU and event records
    (:func:`analysis.load.tables.host_calls_of`)."""

    processes: np.ndarray
    first_start_ns: int | None
    last_start_ns: int | None
    last_end_ns: int | None
    host_calls: pd.DataFrame = field(default_factory=lambda: host_calls_of(*[np.zeros(0, np.int64)] * 3, None))

    @property
    def any_read(self) -> bool:
        """Whether any call was read."""
        return self.first_start_ns is not None


class LaunchJoin:
    """The join of ``tables`` (ops with ``pid``, whole process keys, and ``correlation_id``) with
    API calls handed over a chunk at a time (:meth:`add`).

    Each op's key is its process's position among the ops' processes above its correlation id;
    an op whose id is missing (-1) has none. The keys are held sorted, so that a chunk's calls
    find their ops by a search: each packed above its op's row in one int64 where the key's bits
    and a row's fit in 63 (the usual trace, even at a hundred million ops with correlation ids
    past 2**31), else keys and rows apart, with a sort order and both copied by it (several times
    the memory). Where several calls share an op's key, the op takes the first in the table's
    rowid order: chunks of one slice come in that order, and an op claimed by a later slice is
    claimed again by an earlier one (:attr:`claimed`)."""

    def __init__(self, tables: list[pd.DataFrame]):
        self.sizes = [len(table) for table in tables]
        pids = [table["pid"].to_numpy() for table in tables]
        correlation = [table["correlation_id"].to_numpy() for table in tables]
        self.processes = pd.Index(distinct_keys(*pids))
        largest = max((int(column.max()) for column in correlation if len(column)), default=0)
        self.correlation_bits = max(largest, 0).bit_length()
        total = sum(self.sizes)
        self.row_bits = max(total - 1, 0).bit_length()
        self.packed = (len(self.processes) - 1).bit_length() + self.correlation_bits + self.row_bits <= PACKED_BITS
        # Written a chunk at a time into arrays of every op's length (cut to the keyed ones after):
        # no list of chunks beside a concatenation of them.
        keys = np.empty(total, dtype=np.int64)
        rows = None if self.packed else np.empty(total, dtype=np.int64)
        filled = offset = 0
        for table_pids, table_correlation in zip(pids, correlation):
            for low in range(0, len(table_pids), JOIN_CHUNK_OPS):
                key, keyed = self._keys(table_pids[low:low + JOIN_CHUNK_OPS], table_correlation[low:low + JOIN_CHUNK_OPS])
                at = np.flatnonzero(keyed)
                found = slice(filled, filled + len(at))
                if self.packed:  # the key above the op's row
                    np.left_shift(key[at], self.row_bits, out=keys[found])
                    keys[found] |= at + (offset + low)
                else:
                    keys[found], rows[found] = key[at], at + (offset + low)
                filled += len(at)
            offset += len(table_pids)
        keys = keys[:filled]
        if self.packed:
            keys.sort()  # in place: key, then row
            self.sorted_keys, self.rows = keys, None
        else:
            rows = rows[:filled]
            order = np.argsort(keys, kind="stable")
            self.sorted_keys, self.rows = keys[order], rows[order]
        self.claimed = np.empty(total, dtype=np.int8)
        self.start_ns = np.empty(total, dtype=np.int64)
        self.tid = np.empty(total, dtype=np.int32)
        self.lock = threading.Lock()
        self.start()

    def start(self) -> None:
        """Forget every call joined (in place): each op unclaimed, no call read."""
        self.claimed.fill(UNCLAIMED)
        self.start_ns.fill(-1)
        self.tid.fill(-1)
        self.call_processes: set[int] = set()
        self.first_start: int | None = None
        self.last_start: int | None = None

    def _keys(self, pids: np.ndarray, correlation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The join key of each (process key, correlation id), and whether it has one."""
        process = self.processes.get_indexer(pids)
        keyed = (process >= 0) & (correlation >= 0) & (correlation < (1 << self.correlation_bits))
        return (process.astype(np.int64) << self.correlation_bits) | np.where(keyed, correlation, 0), keyed

    def add(self, part: int, start_ns: np.ndarray, global_tid: np.ndarray, correlation: np.ndarray) -> None:
        """Join one chunk of calls (rowid order) of slice ``part`` of the call table; chunks of
        different slices may come from different threads."""
        call_process = global_tid >> 24
        key, keyed = self._keys(call_process, correlation)
        processes = pd.unique(call_process)
        calls = np.flatnonzero(keyed)
        key = key[calls]
        row_mask = (1 << self.row_bits) - 1
        if self.packed:
            left = np.searchsorted(self.sorted_keys, key << self.row_bits, side="left")
            right = np.searchsorted(self.sorted_keys, (key << self.row_bits) | row_mask, side="right")
        else:
            left = np.searchsorted(self.sorted_keys, key, side="left")
            right = np.searchsorted(self.sorted_keys, key, side="right")
        ops_per_call = right - left
        found = ops_per_call > 0
        calls, left, ops_per_call = calls[found], left[found], ops_per_call[found]
        # Every op of each call's run of keys, in call order: the run's start, then a step per op.
        at = np.repeat(left - np.cumsum(ops_per_call) + ops_per_call, ops_per_call) + np.arange(int(ops_per_call.sum()))
        call_of = np.repeat(calls, ops_per_call)
        rows = self.sorted_keys[at] & row_mask if self.packed else self.rows[at]
        rows, first = np.unique(rows, return_index=True)  # an op's first call in this chunk
        call_of = call_of[first]
        with self.lock:
            self.call_processes.update(processes.tolist())
            low, high = int(start_ns.min()), int(start_ns.max())
            self.first_start = low if self.first_start is None else min(self.first_start, low)
            self.last_start = high if self.last_start is None else max(self.last_start, high)
            take = self.claimed[rows] > part
            rows, call_of = rows[take], call_of[take]
            self.claimed[rows] = part
            self.start_ns[rows] = start_ns[call_of]
            self.tid[rows] = global_tid[call_of] & ID_MASK

    def all_found(self) -> bool:
        """Whether every op found its launch call."""
        return bool((self.claimed != UNCLAIMED).all())

    def joined(self, tables: list[pd.DataFrame], calls: LaunchCalls) -> list[pd.DataFrame]:
        """``tables`` with their launch call's ``launch_start_ns`` and ``launch_tid`` (-1 where
        none; ``launch_tid`` int64 when no call was read), in their order (the loader puts them in
        time order before the join: :func:`analysis.load.tables.in_time_order`). The join's sorted
        keys and claims are released first: no call is joined after this. The first table's
        columns are views of the join's arrays and the others' copies, so that once the first's
        (the kernels, nearly every op) are released, so are the arrays."""
        self.sorted_keys = self.rows = self.claimed = None
        tid = self.tid if calls.any_read else self.tid.astype(np.int64)
        out, offset = [], 0
        for table, size in zip(tables, self.sizes):
            rows = slice(offset, offset + size)
            launch_start, launch_tid = self.start_ns[rows], tid[rows]
            if offset:
                launch_start, launch_tid = launch_start.copy(), launch_tid.copy()
            out.append(with_columns(table, launch_start_ns=launch_start, launch_tid=launch_tid).reset_index(drop=True))
            offset += size
        return out


def join_launch_calls(conn: sqlite3.Connection, schema: dict, strings: StringTable, version: str | None,
                      tables: list[pd.DataFrame]) -> tuple[list[pd.DataFrame], LaunchCalls]:
    """``tables`` (kernels, copies and fills, with whole process keys) joined with their launch
    calls (:meth:`LaunchJoin.joined`), and what is kept of the calls. Their ``correlation_id``
    columns are dropped, from ``tables`` too, once the join has keyed them: at millions of ops
    each is tens of MB that nothing after the join reads. The calls whose name says
    they launch GPU work are read first (about half of a PyTorch trace's calls), with the calls of
    :data:`~analysis.load.tables.HOST_CALL_API` (a few, kept: no second pass over the table reads
    them); every call is read when some op finds none among them."""
    join = LaunchJoin(tables)
    for table in tables:  # keyed: nothing after the join reads it
        del table["correlation_id"]
    if RUNTIME.in_export(schema) is None:
        calls = LaunchCalls(np.zeros(0, dtype=np.int64), None, None, None)
        return join.joined(tables, calls), calls
    require_columns(schema, RUNTIME, version)
    host_ids = np.array(strings.ids_matching(HOST_CALL_API), dtype=np.int64)
    for calls_only in (True, False):
        if not calls_only:  # some op found no call among the launch calls: every call, from the start
            join.start()
        host = _HostCalls(host_ids)
        last_end = stream_columns(conn, schema, RUNTIME, ("start_ns", "tid", "correlation_id", "name_id"), "end_ns",
                                  _launch_filter(schema, strings, calls_only, host_ids), host.consumer(join))
        if join.all_found():
            break
    calls = LaunchCalls(np.array(sorted(join.call_processes), dtype=np.int64), join.first_start, join.last_start,
                        last_end, host.calls(strings))
    return join.joined(tables, calls), calls


class _HostCalls:
    """The calls named by ``ids`` (:data:`~analysis.load.tables.HOST_CALL_API`'s) among the chunks
    the join reads, gathered as they come."""

    def __init__(self, ids: np.ndarray):
        self.ids, self.parts, self.lock = ids, [], threading.Lock()

    def consumer(self, join: LaunchJoin):
        """What :func:`~analysis.load.schema.stream_columns` hands each chunk to: ``join``, then this."""
        def consume(part: int, columns: dict) -> None:
            join.add(part, columns["start_ns"], columns["tid"], columns["correlation_id"])
            if len(self.ids):
                mine = np.isin(columns["name_id"], self.ids)
                if mine.any():
                    with self.lock:
                        self.parts.append([columns[c][mine] for c in ("start_ns", "tid", "name_id")])
        return consume

    def calls(self, strings: StringTable) -> pd.DataFrame:
        """The calls gathered (:func:`~analysis.load.tables.host_calls_of`)."""
        columns = [np.concatenate([part[c] for part in self.parts]) if self.parts else np.zeros(0, np.int64)
                   for c in range(3)]
        return host_calls_of(*columns, strings)


def _launch_filter(schema: dict, strings: StringTable, launch_calls_only: bool, host_ids: np.ndarray) -> str:
    if not launch_calls_only:
        return ""
    ids = [*strings.ids_matching(LAUNCH_API), *host_ids.tolist()]
    return f"WHERE \"{RUNTIME.column(schema, 'name_id')}\" IN ({', '.join(map(str, ids)) or 'NULL'})"
