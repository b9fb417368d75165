"""Readers of NVTX events: names (``text`` or ``StringIds[textId]``) and domains, ranges with their
nesting on each thread, and marks."""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.load.export_map import NVTX, nvtx_names
from analysis.load.schema import (
    NVTX_DOMAIN_CREATE,
    NVTX_MARK,
    NVTX_PUSH_POP,
    NVTX_START_END,
    int_column,
    require_columns,
)
from analysis.load.tables import MAX_TIME_NS, StringTable, keep_rows, narrow_ids, process_of, tid_of

# Under ``emit_nvtx`` (and ``autograd-shapes-nvtx``) a ``torch.profiler.record_function`` scope is
# a range named ``<scope>, op_id = <n>``: read where its name is one as people write them (lower
# case, words joined by ``_`` or spaces), not a kernel's (``triton_…``) or a tensor's ``detach``;
# PyTorch's own scopes (compile timers, ``record_param_comms``) look alike, so the structure takes
# them for the user's only in a trace with no other range of the user's, where one names a phase.
RECORD_FUNCTION_SCOPE = re.compile(r"^(?!triton_|detach_?,)([a-z][a-z0-9_ ]*), op_id = \d+$")
# Op-level ranges (``aten::mm``, ``autograd::engine::…``, ``cub::…``, ``emit_nvtx``'s
# ``aten::add, seq = 3`` and ``MmBackward0, op_id = 7``, ``autograd-shapes-nvtx``'s ``sizes =
# [[…]]``): a trace may hold hundreds of thousands, and no step, phase or attention part is one.
OP_LEVEL = re.compile(rf"^\w+::|, seq = |sizes = \[|^(?!{RECORD_FUNCTION_SCOPE.pattern[1:]}).*op_id = ")


# PyTorch's op ranges of matmul calls with their input shapes (``--pytorch=autograd-shapes-nvtx``):
# ``aten::addmm, seq = 6, op_id = 678, sizes = [[1536], [1024, 512], [512, 1536], [], []], …``.
GEMM_OP = re.compile(r"^aten::(?:mm|addmm|bmm|baddbmm), .*sizes = \[")
# The ``kind`` of a range: pushed and popped on one thread, or started and ended anywhere.
RANGE_KINDS = pd.Index(["push_pop", "start_end"])


@dataclass(frozen=True)
class RangeFilter:
    """Which NVTX ranges to read: those whose name ``skip`` does not find (by default every range
    but the op-level ones, :data:`OP_LEVEL`). Marks and domain names are always read."""

    skip: re.Pattern = OP_LEVEL

    def where(self, conn: sqlite3.Connection, strings: StringTable, schema: dict) -> str:
        """SQL condition on a range row (its ``text``, else its ``textId``) that keeps the wanted
        ranges, through a function registered on ``conn``."""
        skipped = frozenset(strings.ids_matching(self.skip))
        skip = self.skip

        def wanted(text, text_id) -> int:
            if isinstance(text, str):
                return skip.search(text) is None
            return text_id not in skipped

        conn.create_function("nvtx_range_wanted", 2, wanted, deterministic=True)
        text, text_id = NVTX.column(schema, "text"), NVTX.nsys_names(schema, ("text_id",))[0]
        return f"nvtx_range_wanted({text or 'NULL'}, {text_id})"


NVTX_EVENT_COLUMNS = ("start_ns", "end_ns", "event_type", "name", "domain", "pid", "tid", "end_tid")
# The integer columns read_nvtx reads (the export's missing ones read as -1).
NVTX_INTS = ("start_ns", "end_ns", "event_type", "text_id", "tid", "end_tid", "domain_id")


def read_nvtx(conn: sqlite3.Connection, schema: dict, strings: StringTable,
              ranges: RangeFilter | None = None) -> pd.DataFrame:
    """NVTX marks, ranges and domain names, in one scan; a name is ``text`` or else
    ``StringIds[textId]``. With ``ranges`` only the ranges it wants are read."""
    table_name = NVTX.in_export(schema)
    if table_name is None:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in NVTX_EVENT_COLUMNS})
    require_columns(schema, NVTX, None)
    text = NVTX.column(schema, "text")
    event_type = NVTX.column(schema, "event_type")
    kinds = ", ".join(map(str, NVTX_PUSH_POP + NVTX_START_END))
    always = ", ".join(map(str, NVTX_MARK + (NVTX_DOMAIN_CREATE,)))
    condition = "1" if ranges is None else ranges.where(conn, strings, schema)
    ints = ", ".join(f'coalesce("{c}", -1)' if c else "-1" for c in (NVTX.column(schema, t) for t in NVTX_INTS))
    cursor = conn.execute(
        f"SELECT {ints}, {text or 'NULL'} FROM {table_name} "
        f"WHERE {event_type} IN ({always}) OR ({event_type} IN ({kinds}) AND ({condition}))")
    *ints_read, texts = _columns_of(cursor, len(NVTX_INTS) + 1)
    raw = dict(zip(NVTX_INTS, ints_read))
    name = nvtx_names(texts, raw["text_id"], strings)
    end_tid = np.where(raw["end_tid"] >= 0, raw["end_tid"], raw["tid"])
    events = pd.DataFrame({
        "start_ns": raw["start_ns"],
        "end_ns": pd.array(np.where(raw["end_ns"] >= 0, raw["end_ns"], 0), dtype="Int64"),
        "event_type": raw["event_type"],
        "name": name,
        "domain_id": np.maximum(raw["domain_id"], 0),
        "pid": process_of(raw["tid"]),
        "tid": tid_of(raw["tid"]),
        "end_tid": tid_of(end_tid),
    })
    events.loc[raw["end_ns"] < 0, "end_ns"] = pd.NA
    creates = events[events["event_type"] == NVTX_DOMAIN_CREATE]
    events = events[events["event_type"] != NVTX_DOMAIN_CREATE]
    names_of_domains = dict(zip(zip(creates["pid"], creates["domain_id"]), creates["name"]))
    domain = np.full(len(events), "", dtype=object)
    custom = np.flatnonzero(events["domain_id"].to_numpy() > 0)   # domain 0 is the default
    domain[custom] = [names_of_domains.get(key, "") for key in zip(
        events["pid"].to_numpy()[custom], events["domain_id"].to_numpy()[custom])]
    return events.assign(domain=domain).drop(columns="domain_id")


# Rows of an NVTX query turned into columns at a time: the rows as Python tuples cost about 300
# bytes each, tens of MB for every hundred thousand ranges if fetched whole.
READ_CHUNK_ROWS = 1 << 16


def _columns_of(cursor: sqlite3.Cursor, width: int) -> list[np.ndarray]:
    """The rows of ``cursor`` (``width`` values each) as columns: each but the last an int64 column
    (:func:`int_column`), the last (the names) an object column; read :data:`READ_CHUNK_ROWS` rows
    at a time."""
    parts: list[list[np.ndarray]] = []
    while rows := cursor.fetchmany(READ_CHUNK_ROWS):
        table = np.array(rows, dtype=object).reshape(len(rows), width)
        del rows
        parts.append([int_column(table[:, i]) for i in range(width - 1)] + [table[:, -1].copy()])
    if not parts:
        return [np.zeros(0, dtype=np.int64) for _ in range(width - 1)] + [np.zeros(0, dtype=object)]
    return [np.concatenate(column) for column in zip(*parts)]


def read_gemm_ops(conn: sqlite3.Connection, schema: dict, strings: StringTable) -> pd.DataFrame:
    """PyTorch's matmul op ranges with their shapes (:data:`GEMM_OP`): ``start_ns``, ``end_ns``,
    ``pid``, ``tid``, ``name``; empty when the trace has none."""
    columns = ["start_ns", "end_ns", "pid", "tid", "name"]
    start, end, tid = (NVTX.column(schema, c) for c in ("start_ns", "end_ns", "tid"))
    if not (start and end and tid):
        return pd.DataFrame(columns=columns)
    text, text_id = NVTX.column(schema, "text"), NVTX.column(schema, "text_id")
    event_type = NVTX.nsys_names(schema, ("event_type",))[0]
    # SQLite narrows the rows natively (a GLOB on inline names, the ids of matching registered
    # names); the exact pattern is checked on what it lets through.
    ids = ", ".join(map(str, strings.ids_matching(GEMM_OP))) or "NULL"
    by_id = f"{text_id} IN ({ids})" if text_id else "0"
    condition = f"({text} GLOB 'aten::*mm, *sizes = *' OR {by_id})" if text else by_id
    rows = conn.execute(
        f'SELECT "{start}", "{end}", "{tid}", {text or "NULL"}, {text_id or "NULL"} FROM {NVTX.in_export(schema)} '
        f'WHERE {event_type} IN ({", ".join(map(str, NVTX_PUSH_POP))}) AND "{end}" IS NOT NULL AND {condition}').fetchall()
    table = pd.DataFrame(rows, columns=["start_ns", "end_ns", "tid", "text", "text_id"])
    global_tid = table["tid"].to_numpy(np.int64)
    names = nvtx_names(table["text"], table["text_id"].to_numpy(), strings).astype(str)
    found = np.array([GEMM_OP.search(name) is not None for name in names], dtype=bool)
    return pd.DataFrame({"start_ns": table["start_ns"].to_numpy(np.int64)[found],
                         "end_ns": table["end_ns"].to_numpy(np.int64)[found], "pid": process_of(global_tid)[found],
                         "tid": tid_of(global_tid)[found], "name": names[found]}, columns=columns)


# The columns of the ranges :func:`ranges_of` keeps in 32 bits where they fit.
NARROW_RANGE_COLUMNS = ("range_id", "tid", "end_tid", "depth", "parent_id")


def ranges_of(events: pd.DataFrame, capture_end_ns: int, notes: list[str]) -> pd.DataFrame:
    """NVTX ranges sorted by start, ``range_id`` = row, with depth and parent (push/pop nest per thread)."""
    is_range = events["event_type"].isin(NVTX_PUSH_POP + NVTX_START_END)
    ranges = events[is_range].reset_index(drop=True)
    start = ranges["start_ns"].to_numpy()
    ranges = keep_rows(ranges, (start >= 0) & (start < MAX_TIME_NS), notes,
                       "NVTX ranges whose start time is missing, negative or past 2^53 ns").copy()
    # A code a range, not a string: at a million ranges a column of strings is tens of MB.
    ranges["kind"] = pd.Categorical.from_codes(np.where(ranges["event_type"].isin(NVTX_PUSH_POP), 0, 1).astype(np.int8),
                                               categories=RANGE_KINDS)
    ranges["is_open"] = ranges["end_ns"].isna().to_numpy()
    ranges["end_ns"] = ranges["end_ns"].fillna(capture_end_ns).astype(np.int64)
    ranges["name"] = ranges["name"].fillna("").astype(str)
    ranges = ranges.sort_values(["start_ns", "end_ns"], ascending=[True, False], kind="stable")
    ranges = ranges.reset_index(drop=True)
    ranges.insert(0, "range_id", np.arange(len(ranges), dtype=np.int64))
    depth, parent = _nesting(ranges)
    ranges["depth"], ranges["parent_id"] = depth, parent
    open_count = int(ranges["is_open"].sum())
    if open_count:
        notes.append(f"{open_count} NVTX ranges were never closed; they are taken to end with "
                     "the capture")
    columns = ["range_id", "name", "domain", "kind", "start_ns", "end_ns", "is_open", "pid",
               "tid", "end_tid", "depth", "parent_id"]
    ranges = ranges[columns]
    # Ids, threads and depths in 32 bits where they fit (every trace's): 20 B a range, which the
    # analysis holds from the load to the end (tens of MB at millions of ranges).
    return ranges.assign(**{column: narrow_ids(ranges[column].to_numpy()) for column in NARROW_RANGE_COLUMNS})


def _nesting(ranges: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent range_id of push/pop ranges; start/end ranges stay at depth 0.

    ``ranges`` is sorted by (start, -end) and ``range_id`` is the row number. Within a thread
    push/pop ranges nest, so a range's depth is the number of ranges started before it minus
    those ended by its start, and its parent is the latest earlier range one level up: found
    for all ranges at once by a binary search over (level, row) keys, O(n log n) at any depth.
    """
    depth = np.zeros(len(ranges), dtype=np.int64)
    parent = np.full(len(ranges), -1, dtype=np.int64)
    nested = ranges["kind"].to_numpy() == "push_pop"
    for _, rows in ranges[nested].groupby(["pid", "tid"], sort=False).indices.items():
        rows = np.flatnonzero(nested)[rows]
        starts = ranges["start_ns"].to_numpy()[rows]
        ends = np.sort(ranges["end_ns"].to_numpy()[rows])
        order = np.arange(len(rows), dtype=np.int64)
        level = np.maximum(order - np.searchsorted(ends, starts, side="right"), 0)
        depth[rows] = level
        span = len(rows) + 1
        keys = np.sort(level * span + order)
        found = np.searchsorted(keys, (level - 1) * span + order, side="right") - 1
        candidate = keys[np.maximum(found, 0)]
        has_parent = (level > 0) & (found >= 0) & (candidate // span == level - 1)
        parent[rows[has_parent]] = rows[candidate[has_parent] % span]
    return depth, parent


def marks_of(events: pd.DataFrame) -> pd.DataFrame:
    marks = events[events["event_type"].isin(NVTX_MARK)]
    marks = pd.DataFrame({"name": marks["name"].fillna("").astype(str),
                          "domain": marks["domain"], "time_ns": marks["start_ns"],
                          "pid": marks["pid"], "tid": marks["tid"]})
    return marks.sort_values("time_ns", kind="stable").reset_index(drop=True)
