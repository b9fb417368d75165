"""Readers of NVTX events: names (``text`` or ``StringIds[textId]``) and domains, ranges with their
nesting on each thread, and marks."""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.load.schema import (
    NVTX_COLUMNS,
    NVTX_DOMAIN_CREATE,
    NVTX_MARK,
    NVTX_PUSH_POP,
    NVTX_START_END,
    NVTX_TABLE,
    int_column,
    require_columns,
)
from analysis.load.tables import MAX_TIME_NS, StringTable, keep_rows, process_of, tid_of


@dataclass(frozen=True)
class RangeFilter:
    """Which NVTX ranges to read: those named one of ``names``, or one of ``numbered`` followed by
    digits (``step_`` reads ``step_0``, ``step_1``...). Marks and domain names are always read.

    A dense trace (``emit_nvtx``: a range per operator) holds hundreds of thousands of ranges the
    analysis never looks at; the filter leaves them in the file."""

    names: frozenset[str]
    numbered: tuple[str, ...] = ()
    # A trace without a range <steps><digits> is read whole: there the ranges enclosing the phases,
    # whatever their names, tell the shapes a benchmark ran apart.
    steps: str | None = None

    def pattern(self) -> re.Pattern:
        """Matches the wanted names, whole."""
        alternatives = [*map(re.escape, sorted(self.names)), *(rf"{re.escape(p)}\d+" for p in self.numbered)]
        return re.compile(f"^(?:{'|'.join(alternatives)})$" if alternatives else "(?!)")

    def where(self, strings: StringTable, has_text: bool) -> tuple[str, list[str]]:
        """SQL condition on a range row (its ``text``, else its ``textId``) and its parameters;
        it may let through a few names :meth:`pattern` then refuses (``step_1b``)."""
        ids = ", ".join(map(str, strings.ids_matching(self.pattern()))) or "NULL"
        by_id = f"textId IN ({ids})"
        if not has_text:
            return by_id, []
        globs = " OR ".join(["text GLOB ?"] * len(self.numbered)) or "0"
        names = ", ".join(["?"] * len(self.names)) or "NULL"
        condition = f"(text IS NULL AND {by_id}) OR text IN ({names}) OR {globs}"
        return condition, [*sorted(self.names), *(_glob_literal(p) + "[0-9]*" for p in self.numbered)]


def _glob_literal(text: str) -> str:
    """``text`` matched literally by SQLite's GLOB (its wildcards in brackets)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


NVTX_EVENT_COLUMNS = ("start_ns", "end_ns", "event_type", "name", "domain", "pid", "tid", "end_tid")


def read_nvtx(conn: sqlite3.Connection, schema: dict, strings: StringTable,
              ranges: RangeFilter | None = None) -> pd.DataFrame:
    """NVTX marks, ranges and domain names, in one scan; a name is ``text`` or else
    ``StringIds[textId]``. With ``ranges`` only the ranges it names are read."""
    if NVTX_TABLE not in schema:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in NVTX_EVENT_COLUMNS})
    require_columns(schema, NVTX_TABLE, ("start", "end", "eventType", "globalTid"), None)
    has_text = "text" in schema[NVTX_TABLE]
    kinds = ", ".join(map(str, NVTX_PUSH_POP + NVTX_START_END))
    always = ", ".join(map(str, NVTX_MARK + (NVTX_DOMAIN_CREATE,)))
    condition, parameters = ("1", []) if ranges is None else ranges.where(strings, has_text)
    declared = schema[NVTX_TABLE]
    ints = ", ".join(f'coalesce("{c}", -1)' if c in declared else "-1" for c in NVTX_COLUMNS)
    rows = conn.execute(
        f"SELECT {ints}, {'text' if has_text else 'NULL'} FROM {NVTX_TABLE} "
        f"WHERE eventType IN ({always}) OR (eventType IN ({kinds}) AND ({condition}))", parameters).fetchall()
    table = np.array(rows, dtype=object).reshape(len(rows), len(NVTX_COLUMNS) + 1)
    raw = {c: int_column(table[:, i]) for i, c in enumerate(NVTX_COLUMNS)}
    text = table[:, -1]
    name = np.where(pd.isna(text), strings.lookup(raw["textId"]), text)
    if ranges is not None:
        is_range = np.isin(raw["eventType"], NVTX_PUSH_POP + NVTX_START_END)
        wanted = ranges.pattern()
        keep = ~is_range | np.array([isinstance(n, str) and wanted.match(n) is not None for n in name], dtype=bool)
        step = re.compile(rf"{re.escape(ranges.steps)}\d+$") if ranges.steps else None
        if step and not any(isinstance(n, str) and step.match(n) for n in name[keep & is_range]):
            return read_nvtx(conn, schema, strings)
        raw, name = {c: values[keep] for c, values in raw.items()}, name[keep]
    end_tid = np.where(raw["endGlobalTid"] >= 0, raw["endGlobalTid"], raw["globalTid"])
    events = pd.DataFrame({
        "start_ns": raw["start"],
        "end_ns": pd.array(np.where(raw["end"] >= 0, raw["end"], 0), dtype="Int64"),
        "event_type": raw["eventType"],
        "name": name,
        "domain_id": np.maximum(raw["domainId"], 0),
        "pid": process_of(raw["globalTid"]),
        "tid": tid_of(raw["globalTid"]),
        "end_tid": tid_of(end_tid),
    })
    events.loc[raw["end"] < 0, "end_ns"] = pd.NA
    creates = events[events["event_type"] == NVTX_DOMAIN_CREATE]
    events = events[events["event_type"] != NVTX_DOMAIN_CREATE]
    names_of_domains = dict(zip(zip(creates["pid"], creates["domain_id"]), creates["name"]))
    domain = np.full(len(events), "", dtype=object)
    custom = np.flatnonzero(events["domain_id"].to_numpy() > 0)   # domain 0 is the default
    domain[custom] = [names_of_domains.get(key, "") for key in zip(
        events["pid"].to_numpy()[custom], events["domain_id"].to_numpy()[custom])]
    return events.assign(domain=domain).drop(columns="domain_id")


def ranges_of(events: pd.DataFrame, capture_end_ns: int, notes: list[str]) -> pd.DataFrame:
    """NVTX ranges sorted by start, ``range_id`` = row, with depth and parent (push/pop nest per thread)."""
    is_range = events["event_type"].isin(NVTX_PUSH_POP + NVTX_START_END)
    ranges = events[is_range].reset_index(drop=True)
    start = ranges["start_ns"].to_numpy()
    ranges = keep_rows(ranges, (start >= 0) & (start < MAX_TIME_NS), notes,
                       "NVTX ranges whose start time is missing, negative or past 2^53 ns").copy()
    ranges["kind"] = np.where(ranges["event_type"].isin(NVTX_PUSH_POP), "push_pop", "start_end")
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
    return ranges[columns]


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
