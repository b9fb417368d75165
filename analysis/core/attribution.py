"""The rule that ties GPU work to NVTX ranges — written down once, here.

**The rule.** A GPU operation (kernel, memcpy, memset) belongs to an NVTX range when the CUDA API
call that launched it — the runtime or driver call with the same ``correlationId`` in the same
process — started inside the range's time window ``[start_ns, end_ns]``. Where the GPU ran the
operation does not matter: kernels run asynchronously, long after their launch.

Two flavours of "inside", chosen by the caller:

* **any thread** (phase and step ranges): launches from every thread of the range's process
  count. PyTorch's autograd launches the backward pass's kernels from its own worker thread while
  the ``backward`` range was pushed on the main thread; only this flavour sees them.
* **same thread** (fine-grained ranges such as the attention sub-ranges or per-op ranges from
  ``emit_nvtx``): only launches from the thread that pushed the range count, and the innermost
  range wins. This is also the rule of nsys's own ``nvtx_kern_sum``/``nvtx_gpu_proj_sum``.

Operations whose launch call is not in the trace (``launch_start_ns == -1``) belong to no range.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from analysis.core.codes import run_starts
from analysis.load.tables import position_dtype

# Launches searched at a time: the search's temporaries stay a few MiB whatever the trace's length.
CHUNK_OPS = 1 << 20
# Rows whose distinct values are found at once (:func:`distinct_values`): pandas' hash table for
# them takes about 16 bytes a row.
DISTINCT_ROWS = 1 << 16
# Up to this many combinations of key values, a pass over the keys per combination finds the rows
# of each faster than a sort of the keys does (the usual trace: one process, a thread or two).
FEW_GROUPS = 16


def ops_in_windows(ops: pd.DataFrame, windows: pd.DataFrame, *, same_thread: bool = False
                   ) -> np.ndarray:
    """Position (row number) in ``windows`` of the window holding each op's launch, else -1.

    ``ops`` needs ``pid, launch_start_ns, launch_tid``; ``windows`` needs ``pid, start_ns,
    end_ns`` and, with ``same_thread``, ``tid``. Of the windows of the op's group (process, or
    thread) whose ``[start_ns, end_ns]`` holds the launch, the latest-starting one wins: for
    nested windows that is the innermost one, also after a nested sibling has closed (forward
    ``[0, 100]`` holding ``[40, 60]``: a launch at 80 belongs to forward).

    The holder changes only at a window's start or just after its end (times are integers), so
    each group's windows cut time into pieces, the rule is asked once per piece, at its first
    time, and each launch looks up its piece: one binary search per launch (per cut, for launches
    in order: :func:`_piece_of_each`).
    """
    return ops_in_window_tables(ops, [windows], same_thread=same_thread)[0]


def ops_in_window_tables(ops: pd.DataFrame, tables: list[pd.DataFrame], *, same_thread: bool = False,
                         labels: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """:func:`ops_in_windows` for each of ``tables``, with one binary search per launch for them
    all: the windows of every table cut time into the pieces the launches look up. With
    ``labels`` (per table, a value per window position and one more, last, for "no window"),
    each op gets its window's value, in the labels' dtype, instead of the position: a code per
    op in fewer bytes than a position."""
    if labels is None:
        labels = [_window_positions(len(windows)) for windows in tables]
    results = [np.full(len(ops), label[-1], dtype=label.dtype) for label in labels]
    if not len(ops) or not any(len(windows) for windows in tables):
        return results
    keys = ["pid", "tid"] if same_thread else ["pid"]
    sorted_windows: dict[tuple, list] = {}  # per group: (table, positions, starts, ends) sorted by start
    for table, windows in enumerate(tables):
        if not len(windows):
            continue
        # As int64 whatever the table's dtype: a search in Python integers (an object column) is ten times slower.
        starts, ends = (windows[column].to_numpy(dtype=np.int64) for column in ("start_ns", "end_ns"))
        for key, rows in rows_by_key(*(windows[key].to_numpy() for key in keys)).items():
            order = rows[np.argsort(starts[rows], kind="stable")]
            sorted_windows.setdefault(key, []).append((table, order, starts[order], ends[order]))
    launch = ops["launch_start_ns"].to_numpy()
    op_keys = [ops[key].to_numpy() for key in (["pid", "launch_tid"] if same_thread else ["pid"])]
    pieces: dict[tuple, tuple] = {}  # per group met among the ops: its cuts and each table's holder per piece
    # The ops are grouped a chunk at a time: the positions of every group's ops at once would be
    # one more number per op.
    for low in range(0, len(ops), CHUNK_OPS):
        part = slice(low, low + CHUNK_OPS)
        for key, rows in _groups(*(column[part] for column in op_keys)).items():
            if key not in sorted_windows:
                continue
            if key not in pieces:
                pieces[key] = _pieces(sorted_windows[key], results, labels)
            cuts, holders = pieces[key]
            op_rows = part if rows is None else rows + low
            piece = _piece_of_each(cuts, launch[op_rows])
            for result, holder in holders:
                result[op_rows] = holder[piece]
    return results


def _piece_of_each(cuts: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The piece of each of ``times``: the position of the last of ``cuts`` (ascending) at or
    before it, -1 before them all. A binary search per time; for more times than cuts in
    ascending order (the launches of the ops, most often), one per cut instead, each piece then
    repeated over the run of times it holds."""
    if len(times) > len(cuts) and bool((times[1:] >= times[:-1]).all()):
        first_at = np.searchsorted(times, cuts, side="left")  # the first time at or after each cut
        return np.repeat(np.arange(-1, len(cuts)), np.diff(np.r_[0, first_at, len(times)]))
    return np.searchsorted(cuts, times, side="right") - 1


def _window_positions(count: int) -> np.ndarray:
    """The labels of :func:`ops_in_window_tables` that are the windows' positions: ``0 .. count -
    1``, then -1 for "no window", as :func:`position_dtype` of ``count``."""
    positions = np.arange(count + 1, dtype=position_dtype(count))
    positions[-1] = -1
    return positions


def _pieces(found: list[tuple], results: list[np.ndarray], labels: list[np.ndarray]
            ) -> tuple[np.ndarray, list[tuple]]:
    """The times that cut one group's windows (``found``: per table, positions, starts and ends
    sorted by start) into pieces, and per table its result array and the label of each piece's
    holder (that of "no window" before time 0), with that of "no window" last for a launch
    before every piece."""
    # A repeated cut is harmless (each copy gets the same holder); np.sort is far faster than np.unique.
    cuts = np.sort(np.concatenate([[0], *(np.r_[starts, ends + 1] for _, _, starts, ends in found)]))
    holders = []
    for table, order, starts, ends in found:
        pick = _latest_holding(starts, ends, cuts)
        holder = np.append(np.where((pick >= 0) & (cuts >= 0), order[pick], -1), -1)
        holders.append((results[table], labels[table][holder]))  # -1: the last label, "no window"
    return cuts, holders


def _groups(*columns: np.ndarray) -> dict[tuple, np.ndarray | None]:
    """:func:`rows_by_key`, with None for "every row" when the columns hold one value each (one
    process, one thread: the usual trace), which saves an array of positions the trace's length."""
    if len(columns[0]) and all((column == column[0]).all() for column in columns):
        return {tuple(column[0] for column in columns): None}
    return rows_by_key(*columns)


def rows_by_key(*columns: np.ndarray) -> dict[tuple, np.ndarray]:
    """Row positions (ascending) per distinct combination of the values of ``columns`` (equal
    lengths, no missing values), keyed by the tuple of values; ``groupby(...).indices`` without
    pandas' per-call cost. Keys come in order of their values' first appearance, the first
    column's first."""
    if not len(columns[0]):
        return {}
    distinct = [distinct_values(column) for column in columns]
    combinations = math.prod(map(len, distinct))
    if combinations <= FEW_GROUPS:
        # A pass over the columns per combination, a chunk at a time, with positions in 32 bits
        # where they fit: no whole-length codes (the usual trace: one process, a thread or two).
        keys = itertools.product(*distinct)
        found = ((key, positions_where_all(columns, key)) for key in keys)
        return {tuple(key): rows for key, rows in found if len(rows)}
    key = None  # each row's combination, numbered as itertools.product numbers them
    for column, uniques in zip(columns, distinct):
        codes = pd.Index(uniques).get_indexer(column)
        key = codes if key is None else key * len(uniques) + codes
        del codes
    # The codes in the fewest bytes that hold them: one per row, sorted whole (numpy sorts 8- and
    # 16-bit integers by radix).
    key = key.astype(np.min_scalar_type(combinations - 1))
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    first = run_starts(sorted_key)
    groups = {}
    for code, rows in zip(sorted_key[first].tolist(), np.split(order, first[1:])):
        values = []
        for uniques in reversed(distinct):
            code, position = divmod(code, len(uniques))
            values.append(uniques[position])
        groups[tuple(reversed(values))] = rows
    return groups


def distinct_values(column: np.ndarray) -> np.ndarray:
    """The distinct values of ``column`` in order of first appearance (``pd.unique``), found
    :data:`DISTINCT_ROWS` rows at a time: a hash table is sized by the rows it is given."""
    return pd.unique(np.concatenate([pd.unique(column[low:low + DISTINCT_ROWS])
                                     for low in range(0, len(column), DISTINCT_ROWS)]))


def positions_where_all(columns: tuple[np.ndarray, ...], values: tuple) -> np.ndarray:
    """Positions (ascending) of the rows whose ``columns`` equal ``values`` (one per column), as
    :func:`position_dtype` of their length: counted first, then found :data:`CHUNK_OPS` rows at
    a time, so that neither a whole-length mask nor an array of 64-bit positions as long as the
    result is made on the way."""
    def matches(low: int) -> np.ndarray:
        rows = slice(low, low + CHUNK_OPS)
        match = columns[0][rows] == values[0]
        for column, value in zip(columns[1:], values[1:]):
            match &= column[rows] == value
        return match

    chunks = range(0, len(columns[0]), CHUNK_OPS)
    found = np.empty(sum(int(np.count_nonzero(matches(low))) for low in chunks), dtype=position_dtype(len(columns[0])))
    filled = 0
    for low in chunks:
        part = np.flatnonzero(matches(low))
        found[filled:filled + len(part)] = part + low
        filled += len(part)
    return found


def _latest_holding(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each time, the position of the latest-starting window holding it, else -1 (windows
    sorted by start).

    Most times lie in the latest window started before them (one ``searchsorted``). The rest (a
    time after a nested window closed, or between windows) drop whole blocks of windows that end
    too early, longest first: binary lifting over a sparse table of block maxima
    (``level_max[k][i]`` = max of ``ends[i : i + 2**k]``), so n windows and m times cost
    O((n + m) log n) whatever the nesting depth."""
    last = np.searchsorted(starts, times, side="right") - 1
    started = last >= 0
    direct = started.copy()
    direct[started] = ends[last[started]] >= times[started]
    pick = np.where(direct, last, -1)
    rest = np.flatnonzero(started & ~direct)
    if len(rest):
        level_max = [ends]
        for level in range(1, len(ends).bit_length()):
            width = 1 << (level - 1)
            level_max.append(np.maximum(level_max[-1][:-width], level_max[-1][width:]))
        after, later = last[rest] + 1, times[rest]  # the candidates are ends[:after]; drop blocks from its right end
        for level in range(len(level_max) - 1, -1, -1):
            start = after - (1 << level)
            can_drop = start >= 0
            can_drop[can_drop] = level_max[level][start[can_drop]] < later[can_drop]
            after[can_drop] = start[can_drop]
        pick[rest] = after - 1
    return pick


def innermost_ranges(ops: pd.DataFrame, ranges: pd.DataFrame, values: np.ndarray | None = None) -> np.ndarray:
    """``range_id`` of the innermost push/pop range on each op's launching thread, else -1; with
    ``values`` (one per range id, and one more, last, for "no range"), each op's value instead.

    ``ranges`` is :attr:`analysis.load.Trace.ranges` (``range_id`` = row). Push/pop ranges of
    one thread nest, so the innermost one holding a launch is the latest-starting one that
    holds it: the same-thread flavour of :func:`ops_in_windows`.
    """
    if values is None:
        values = _window_positions(len(ranges))
    nested = np.flatnonzero(ranges["kind"].to_numpy() == "push_pop")
    if len(nested) == len(ranges):  # every range is a push/pop one (the usual trace): positions are ids
        return ops_in_window_tables(ops, [ranges], same_thread=True, labels=[values])[0]
    return ops_in_window_tables(ops, [ranges.iloc[nested]], same_thread=True,
                                labels=[np.append(values[nested], values[-1])])[0]
