"""Readers of the GPU-side tables: interned strings, kernels, memcpy/memset, the runtime and driver
API calls that launched them (joined by correlationId within a process), and the GPUs."""
from __future__ import annotations

import re
import sqlite3

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from analysis.load.export_map import CUDA_GPUS, GRAPHS, KERNELS, MEMCPY, MEMSET, OLD_GPUS, STRINGS
from analysis.load.schema import read_columns, require_columns

ID_MASK = 0xFFFFFF
# nsys times are ns since the session began; 2^53 ns is 104 days, so a later time is corrupt.
MAX_TIME_NS = 1 << 53
UNNAMED_KERNEL = "(kernel without a name)"
# The kernel name a whole CUDA-graph execution is listed under (:func:`read_graph_executions`).
GRAPH_EXECUTION = "[CUDA graph {}]"
# The program's own calls that tell what it measures, by the kind :func:`host_calls_of` gives
# each: those that start and stop a profiler's capture (what --capture-range=cudaProfilerApi
# follows), the host's waits for the GPU (``torch.cuda.synchronize()``, ``.item()``) and the
# records of CUDA events (``torch.cuda.Event.record()``, a timed loop's bounds).
HOST_CALL_API = re.compile(r"^cu(?:da)?(?:Profiler(?P<profiler>Start|Stop)|(?P<sync>Device|Ctx|Stream|Event)Synchronize"
                           r"|(?P<record>EventRecord)(?:WithFlags)?)(?:_v\d+|_ptsz)*$")
INT32 = np.iinfo(np.int32)
# Rows taken at a time by the load's passes over whole columns (the launch join's keys, durations,
# distinct processes): each pass's temporaries stay a few MiB whatever the trace's length.
JOIN_CHUNK_OPS = 1 << 20


class StringTable:
    """nsys's interned strings (``StringIds``), looked up for whole columns at once.

    Held as sorted ids beside their values, so memory follows the number of strings, not the
    largest id; a BLOB value is decoded as UTF-8 (bad bytes replaced), NULL stays unknown."""

    def __init__(self, conn: sqlite3.Connection, schema: dict):
        table = STRINGS.in_export(schema)
        if table is not None:
            require_columns(schema, STRINGS, None)
        rows = conn.execute(f'SELECT "{STRINGS.column(schema, "id")}", "{STRINGS.column(schema, "value")}" '
                            f"FROM {table}").fetchall() if table is not None else []
        ids = np.fromiter((r[0] if isinstance(r[0], int) else -1 for r in rows), dtype=np.int64, count=len(rows))
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.values = np.array([_as_text(rows[i][1]) for i in order] + [None], dtype=object)
        self._matching: dict[re.Pattern, list[int]] = {}

    def _rows(self, ids) -> np.ndarray:
        """Row in ``values`` of each id; the last row (None) for null, negative or unknown ids."""
        as_int = pd.to_numeric(pd.Series(ids), errors="coerce").fillna(-1).to_numpy(np.int64)
        found = np.minimum(np.searchsorted(self.ids, as_int), max(len(self.ids) - 1, 0))
        hit = (as_int >= 0) & (self.ids[found] == as_int) if len(self.ids) else np.zeros(len(as_int), bool)
        return np.where(hit, found, len(self.values) - 1)

    def lookup(self, ids) -> np.ndarray:
        """Strings for an integer id column; None where the id is null, negative or unknown."""
        return self.values[self._rows(ids)]

    def ids_matching(self, pattern: re.Pattern) -> list[int]:
        """Ids of the strings that ``pattern`` finds (each pattern searched for once)."""
        if pattern not in self._matching:
            self._matching[pattern] = [int(i) for i, value in zip(self.ids, self.values)
                                       if value is not None and pattern.search(value)]
        return self._matching[pattern]

    def categorical(self, ids) -> pd.Categorical:
        """Like :meth:`lookup`, as a categorical; each distinct id is looked up once. Categories
        follow the ids' order. The distinct ids and each row's position among them are found
        :data:`JOIN_CHUNK_OPS` rows at a time: at millions of rows a hash table or 64-bit codes
        of the whole column would each be as large as it."""
        ids = np.asarray(ids)
        if ids.dtype not in (np.int64, np.int32):
            ids = pd.to_numeric(pd.Series(ids), errors="coerce").fillna(-1).to_numpy(np.int64)
        chunks = [slice(low, low + JOIN_CHUNK_OPS) for low in range(0, len(ids), JOIN_CHUNK_OPS)]
        distinct = np.unique(np.concatenate([np.unique(ids[rows]) for rows in chunks] or [ids[:0]]))
        labels = self.lookup(distinct)
        known = np.array([label is not None for label in labels], dtype=bool)
        categories = pd.Index(labels[known])
        if categories.has_duplicates:
            return pd.Categorical(labels[np.searchsorted(distinct, ids)])
        # Each distinct id's category, then one gather per row in the fewest bytes that hold them.
        category_of = np.where(known, np.cumsum(known) - 1, -1).astype(np.min_scalar_type(-max(len(categories), 1)))
        codes = np.empty(len(ids), dtype=category_of.dtype)
        for rows in chunks:
            codes[rows] = category_of[np.searchsorted(distinct, ids[rows])]
        del ids  # a caller that handed its column over frees it here
        return pd.Categorical.from_codes(codes, categories=categories)


def _as_text(value) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return None if value is None else str(value)


def process_of(global_id) -> np.ndarray:
    """The whole process key of a globalTid/globalPid: host, VM and process bits (``>> 24``), which
    tells apart equal pids of processes on different hosts (ranks in containers); in 32 bits when
    every key fits (one host's keys are its pids), as :func:`narrow_ids`."""
    return narrow_ids(np.asarray(global_id, dtype=np.int64) >> 24)


def shared_pids(*keys: np.ndarray) -> np.ndarray:
    """The 24-bit pids that more than one process key (:func:`process_of`) of the trace has."""
    distinct = distinct_keys(*keys)
    counts = pd.Series(distinct[distinct >= 0] & ID_MASK).value_counts()
    return counts.index[counts > 1].to_numpy(np.int64)


def distinct_keys(*columns: np.ndarray) -> np.ndarray:
    """The distinct values of ``columns`` (process keys) as int64, in order of first appearance.
    Each column's distinct values are found a chunk of rows at a time: a concatenation of whole
    columns would be the size of them all, and a column's hash table or 64-bit copy as large as it."""
    columns = [np.asarray(column) for column in columns]
    return pd.unique(np.concatenate([pd.unique(column[low:low + JOIN_CHUNK_OPS]).astype(np.int64)
                                     for column in columns for low in range(0, len(column), JOIN_CHUNK_OPS)]
                                    or [np.zeros(0, dtype=np.int64)]))


def pid_column(keys: np.ndarray, shared) -> np.ndarray:
    """Process keys as the trace's ``pid`` column: the 24-bit pid (what nsys shows), or the whole
    key where processes on different hosts share that pid (``shared``: :func:`shared_pids`)."""
    keys = np.asarray(keys)  # int64, or int32 where every key fits (process_of)
    if not len(shared):  # pids alone, which fit 32 bits: masked a chunk at a time, no whole-length temporary
        pids = np.empty(len(keys), dtype=np.int32)
        for low in range(0, len(keys), JOIN_CHUNK_OPS):
            np.bitwise_and(keys[low:low + JOIN_CHUNK_OPS], ID_MASK, out=pids[low:low + JOIN_CHUNK_OPS], casting="unsafe")
        return pids
    masked = keys & ID_MASK
    return narrow_ids(np.where(np.isin(masked, np.asarray(shared, dtype=np.int64)), keys, masked))


def tid_of(global_id) -> np.ndarray:
    return np.asarray(global_id, dtype=np.int64) & ID_MASK


def narrow_ids(values: np.ndarray) -> np.ndarray:
    """``values`` as int32 when they all fit (ids, sizes: half the memory of a row's int64), else as is."""
    if len(values) and not (INT32.min <= values.min() and values.max() <= INT32.max):
        return values
    return values.astype(np.int32, copy=False)


def smallest_ints(values: np.ndarray) -> np.ndarray:
    """``values`` in the narrowest of int8, int16 and int32 that holds every one (GPU and stream
    numbers: a byte or two a row instead of four), else as they are."""
    if not len(values):
        return values.astype(np.int8)
    low, high = values.min(), values.max()
    for dtype in (np.int8, np.int16, np.int32):
        if np.iinfo(dtype).min <= low and high <= np.iinfo(dtype).max:
            return values.astype(dtype, copy=False)
    return values


def position_dtype(count: int) -> type:
    """The dtype of positions among ``count`` rows (and -1): int32 where they fit, which halves
    an array of one position per op at millions of ops, else int64."""
    return np.int32 if count <= INT32.max else np.int64


# The id columns of the GPU activity tables read in 32 bits where they fit (globalPid holds host bits
# above its pid: it is read in 64).
ACTIVITY_IDS = ("device_id", "stream_id", "correlation_id")


def _activity_columns(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The columns every GPU activity table (kernel, memcpy, memset) shares, with ``end_ns`` (the
    loader puts ``dur_ns`` in its place: :func:`with_durations`); GPU and stream numbers in the fewest
    bytes that hold them, the other ids in 32 bits where they fit (correlation ids too: CUPTI counts
    them in 32 bits); times stay 64-bit. The id columns are
    taken out of ``raw``, each freed once converted."""
    return {
        "start_ns": raw["start_ns"],
        "end_ns": raw["end_ns"],
        "device_id": smallest_ints(raw.pop("device_id")),
        "stream_id": smallest_ints(raw.pop("stream_id")),
        "correlation_id": narrow_ids(raw.pop("correlation_id")),
        "pid": process_of(raw.pop("pid")),
    }


def read_kernels(conn: sqlite3.Connection, schema: dict, strings: StringTable
                  ) -> pd.DataFrame:
    """Kernels, named by their demangled names (the short ones are not read: no figure shows them);
    a name that is NULL or not in StringIds reads as :data:`UNNAMED_KERNEL`."""
    raw = read_columns(conn, schema, KERNELS, tuple(column.tidy for column in KERNELS.columns if column.required),
                       narrow=(*ACTIVITY_IDS, "demangled_name"))
    # Each raw column is taken out as it is converted, so that it is freed then, not at the end.
    names = _named(strings.categorical(raw.pop("demangled_name")))
    return pd.DataFrame({**_activity_columns(raw), "demangled_name": names}, copy=False)


def read_graph_executions(conn: sqlite3.Connection, schema: dict) -> pd.DataFrame:
    """Whole CUDA-graph executions as kernel rows: the GPU activity columns of each, and as
    demangled name ``[CUDA graph <graphId>]`` (:data:`GRAPH_EXECUTION`). A trace taken with
    ``--cuda-graph-trace=graph`` lists a launched graph as one record, from its first kernel's start
    to its last kernel's end, and none of the kernels inside: this row is then all the trace knows
    of that GPU work, and is launched by its ``cudaGraphLaunch`` call as a kernel is by its."""
    raw = read_columns(conn, schema, GRAPHS, tuple(column.tidy for column in GRAPHS.columns), narrow=ACTIVITY_IDS)
    graph_ids, codes = np.unique(raw.pop("graph_id"), return_inverse=True)
    names = pd.Categorical.from_codes(codes.reshape(-1), categories=[
        GRAPH_EXECUTION.format(graph_id if graph_id >= 0 else "?") for graph_id in graph_ids])
    return pd.DataFrame({**_activity_columns(raw), "demangled_name": names}, copy=False)


def appended(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``rows`` (the same columns) after its own; categorical columns keep their
    categories, those of ``rows`` added after them."""
    return pd.DataFrame({
        column: union_categoricals([table[column], rows[column]]) if isinstance(table[column].dtype, pd.CategoricalDtype)
        else np.concatenate([table[column].to_numpy(), rows[column].to_numpy()]) for column in table.columns}, copy=False)


def _named(names: pd.Categorical) -> pd.Categorical:
    if not names.isna().any():
        return names
    if UNNAMED_KERNEL not in names.categories:
        names = names.add_categories([UNNAMED_KERNEL])
    return names.fillna(UNNAMED_KERNEL)


def drop_unusable_times(ops: pd.DataFrame, what: str, notes: list[str]) -> pd.DataFrame:
    """``ops`` without the rows whose start/end is missing (NULL reads as -1), negative, before
    its start or past :data:`MAX_TIME_NS`; a note counts them."""
    start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    return keep_rows(ops, (start >= 0) & (end >= start) & (end < MAX_TIME_NS), notes,
                     f"{what} whose start or end time is missing, negative, before its start or past 2^53 ns")


def keep_rows(rows: pd.DataFrame, usable: np.ndarray, notes: list[str], why: str) -> pd.DataFrame:
    """The ``usable`` rows of ``rows``; when some are not, a note says how many were left out and
    ``why`` (``"<what> whose <fault>"``)."""
    dropped = len(rows) - int(usable.sum())
    if not dropped:
        return rows
    notes.append(f"left out {dropped:,} of {len(rows):,} {why}")
    return rows[usable].reset_index(drop=True)


def drop_repeats(rows: pd.DataFrame, columns: list[str], notes: list[str], what: str) -> pd.DataFrame:
    """``rows`` without later copies of a row equal in every one of ``columns`` (an export that
    holds an event twice would count it twice); a note counts them."""
    repeated = rows.duplicated(columns).to_numpy()
    if not repeated.any():
        return rows
    notes.append(f"{int(repeated.sum()):,} {what} appear twice in the trace; each is counted once")
    return rows[~repeated].reset_index(drop=True)


def read_memops(conn: sqlite3.Connection, schema: dict) -> pd.DataFrame:
    """Memory copies and fills: ``kind`` (``memcpy``/``memset``), the GPU activity columns, ``bytes``."""
    frames = []
    columns = tuple(column.tidy for column in MEMCPY.columns)
    for table, kind in ((MEMCPY, "memcpy"), (MEMSET, "memset")):
        if table.in_export(schema) is not None:
            raw = read_columns(conn, schema, table, columns, narrow=ACTIVITY_IDS)
            frames.append(pd.DataFrame({"kind": kind, **_activity_columns(raw),
                                        "bytes": np.maximum(raw["bytes"], 0)}))
    if not frames:
        empty = {c: np.zeros(0, dtype=np.int64) for c in columns}
        frames.append(pd.DataFrame({"kind": pd.Series(dtype=object), **_activity_columns(empty),
                                    "bytes": empty["bytes"]}))
    return pd.concat(frames, ignore_index=True)


def host_calls_of(start_ns: np.ndarray, tid: np.ndarray, name_id: np.ndarray, strings: StringTable | None) -> pd.DataFrame:
    """The program's calls of :data:`HOST_CALL_API` among API calls read (their start, globalTid
    and name id, every name one of :data:`HOST_CALL_API`'s; no ``strings`` needed without calls):
    ``pid`` (the whole process key), ``start_ns``, ``call`` (``start`` or ``stop`` for the
    profiler's, ``sync`` for a wait for the GPU, ``record`` for an event's record), in time order."""
    ids, codes = np.unique(np.asarray(name_id, dtype=np.int64), return_inverse=True)
    kinds = np.array([_host_call_kind(name) for name in strings.lookup(ids)] if len(ids) else [], dtype=object)
    calls = pd.DataFrame({"pid": process_of(np.asarray(tid, dtype=np.int64)), "start_ns": np.asarray(start_ns, dtype=np.int64),
                          "call": kinds[codes.reshape(-1)]})
    return calls.sort_values("start_ns", kind="stable").reset_index(drop=True)


def _host_call_kind(name: str) -> str:
    """The kind :func:`host_calls_of` gives a call of :data:`HOST_CALL_API` named ``name``."""
    match = HOST_CALL_API.match(name)
    return match["profiler"].lower() if match["profiler"] else "sync" if match["sync"] else "record"


def with_durations(ops: pd.DataFrame) -> pd.DataFrame:
    """``ops`` (ends never before starts: :func:`drop_unusable_times`) with ``dur_ns`` (end minus
    start) in place of ``end_ns``: int32 where every duration fits (a kernel runs for less than
    2.1 s), else int64. Found in chunks, so that no whole-length int64 difference is made beside
    the column. An op's end is then its start plus its duration (:func:`op_ends`): at millions of
    kernels an end column is 8 bytes an op held from the load to the last figure."""
    start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    chunks = [slice(low, low + JOIN_CHUNK_OPS) for low in range(0, len(ops), JOIN_CHUNK_OPS)]
    longest = max((int((end[rows] - start[rows]).max()) for rows in chunks), default=0)
    durations = np.empty(len(ops), dtype=np.int32 if longest <= INT32.max else np.int64)
    for rows in chunks:
        np.subtract(end[rows], start[rows], out=durations[rows], casting="unsafe")  # fits: checked above
    return pd.DataFrame({("dur_ns" if column == "end_ns" else column): durations if column == "end_ns" else ops[column]
                         for column in ops.columns}, copy=False)


def op_ends(ops: pd.DataFrame, rows: slice | np.ndarray = slice(None)) -> np.ndarray:
    """The end of each op of ``rows`` (a slice, mask or positions; every op unless told): its start
    plus its duration (:func:`with_durations`), as int64: the end nsys recorded."""
    return ops["start_ns"].to_numpy()[rows] + ops["dur_ns"].to_numpy()[rows]


def ops_within(ops: pd.DataFrame, start: int, end: int) -> np.ndarray:
    """Positions of the ``ops`` (in time order: sorted by start) that start at ``start`` or later
    and end at ``end`` or earlier: only the rows that start inside the window are read."""
    starts = ops["start_ns"].to_numpy()
    low, high = np.searchsorted(starts, start, side="left"), np.searchsorted(starts, end, side="right")
    return low + np.flatnonzero(op_ends(ops, slice(low, high)) <= end)


def latest_end(ops: pd.DataFrame) -> int | None:
    """The latest end of ``ops`` (None for none), found :data:`JOIN_CHUNK_OPS` rows at a time."""
    return max((int(op_ends(ops, slice(low, low + JOIN_CHUNK_OPS)).max()) for low in range(0, len(ops), JOIN_CHUNK_OPS)),
               default=None)


def with_columns(table: pd.DataFrame, **columns) -> pd.DataFrame:
    """``table`` with ``columns`` (arrays of its length) added, none of them copied (``assign``
    copies each new array: at millions of rows a column is tens of MB); ``table`` has a default index."""
    return pd.DataFrame({**{column: table[column] for column in table.columns}, **columns}, copy=False)


def in_time_order(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (ops with ``start_ns`` and ``dur_ns``) sorted by start, then duration (so by
    start, then end), rows of equal both in their order, with a default index. An export already
    in that order (the usual case) is not sorted again; otherwise (the ops of several processes
    come out of the export interleaved out of time order) the table is moved into its sorted copy
    (:func:`sorted_rows`), before the launch join's arrays exist."""
    start, dur = table["start_ns"].to_numpy(), table["dur_ns"].to_numpy()
    if sorted_by(start, dur):
        return table.reset_index(drop=True)
    if (start[1:] >= start[:-1]).all():  # in order of start: only ops of equal starts (on several GPUs) move
        order = _ties_in_order(start, dur)
    else:
        order = np.lexsort((dur, start))
    del start, dur
    return sorted_rows(table, order)


def _ties_in_order(start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The order by start, then duration, of rows in order of start: each run of equal starts
    sorted by duration (stable), the other rows where they are. Only the tied rows are sorted,
    with no whole-table sort's temporaries (a sort of millions of rows holds several times its
    positions)."""
    equal = np.flatnonzero(start[1:] == start[:-1])  # each row whose start equals the next row's
    tied = np.union1d(equal, equal + 1)
    order = np.arange(len(start), dtype=position_dtype(len(start)))
    order[tied] = tied[np.lexsort((dur[tied], start[tied]))]
    return order


def sorted_rows(table: pd.DataFrame, order: np.ndarray) -> pd.DataFrame:
    """The rows of ``table`` in ``order`` (positions), with a default index. Taken a column at a
    time, each column of ``table`` deleted from it once taken, so that ``table`` is left without
    columns: at millions of rows the table is never held twice, as a sort of the whole table would
    hold it. ``order`` is kept in 32 bits where the rows allow."""
    order = order.astype(position_dtype(len(table)), copy=False)
    taken = {}
    for column in list(table.columns):
        taken[column] = table[column].array.take(order)
        del table[column]
    return pd.DataFrame(taken, copy=False)


def sorted_by(first: np.ndarray, then: np.ndarray) -> bool:
    """Whether rows are sorted by ``first``, then ``then`` (start, then end; process, then launch
    time): one pass, no sort, and no copy of the rows of equal ``first``."""
    return bool((first[1:] >= first[:-1]).all() and ((first[1:] != first[:-1]) | (then[1:] >= then[:-1])).all())


def read_gpus(conn: sqlite3.Connection, schema: dict) -> pd.DataFrame:
    """One row per GPU: device_id (CUDA ordinal), name, sm_count, memory_bytes, clock_hz."""
    columns = ["device_id", "name", "sm_count", "memory_bytes", "clock_hz"]
    if CUDA_GPUS.in_export(schema) is not None:
        device, name, sm_count, memory, clock_khz = CUDA_GPUS.nsys_names(schema, (*columns[:4], "clock_khz"))
        sql = (f"SELECT {device}, {name}, {sm_count}, {memory}, {clock_khz} * 1000 "
               f"FROM {CUDA_GPUS.in_export(schema)}")
    elif OLD_GPUS.in_export(schema) is not None:
        picks = (f'"{name}"' if name else "NULL" for name in (OLD_GPUS.column(schema, c) for c in columns))
        sql = f"SELECT {', '.join(picks)} FROM {OLD_GPUS.in_export(schema)}"
    else:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    gpus = pd.DataFrame(conn.execute(sql).fetchall(), columns=columns)
    gpus["device_id"] = pd.to_numeric(gpus["device_id"]).fillna(0).astype(np.int64)
    return gpus.drop_duplicates("device_id").sort_values("device_id").reset_index(drop=True)
