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

import numpy as np
import pandas as pd


def ops_in_windows(ops: pd.DataFrame, windows: pd.DataFrame, *, same_thread: bool = False
                   ) -> np.ndarray:
    """Position (row number) in ``windows`` of the window holding each op's launch, else -1.

    ``ops`` needs ``pid, launch_start_ns, launch_tid``; ``windows`` needs ``pid, start_ns,
    end_ns`` and, with ``same_thread``, ``tid``. Windows of one group (process, or thread) should
    not overlap — e.g. all instances of one phase; where they nest, the latest-starting one that
    holds the launch wins.
    """
    result = np.full(len(ops), -1, dtype=np.int64)
    if not len(ops) or not len(windows):
        return result
    keys = ["pid", "tid"] if same_thread else ["pid"]
    op_keys = ["pid", "launch_tid"] if same_thread else ["pid"]
    launch = ops["launch_start_ns"].to_numpy()
    op_groups = ops.groupby(op_keys, sort=False).indices
    for key, window_rows in windows.groupby(keys, sort=False).indices.items():
        op_rows = op_groups.get(key)
        if op_rows is None:
            continue
        order = window_rows[np.argsort(windows["start_ns"].to_numpy()[window_rows], kind="stable")]
        starts = windows["start_ns"].to_numpy()[order]
        ends = windows["end_ns"].to_numpy()[order]
        times = launch[op_rows]
        pick = np.searchsorted(starts, times, side="right") - 1
        ok = (pick >= 0) & (times >= 0)
        ok[ok] &= times[ok] <= ends[pick[ok]]
        result[op_rows[ok]] = order[pick[ok]]
    return result


def innermost_ranges(ops: pd.DataFrame, ranges: pd.DataFrame) -> np.ndarray:
    """``range_id`` of the innermost push/pop range on each op's launching thread, else -1.

    ``ranges`` is :attr:`analysis.load.Trace.ranges` (sorted by start, ``range_id`` = row,
    push/pop ranges carry ``parent_id``). The latest range started at or before the launch is
    found by binary search; while it ended before the launch, its parent is taken instead (nested
    ranges make that the innermost one holding the launch).
    """
    result = np.full(len(ops), -1, dtype=np.int64)
    nested = np.flatnonzero(ranges["kind"].to_numpy() == "push_pop")
    if not len(ops) or not len(nested):
        return result
    starts = ranges["start_ns"].to_numpy()
    ends = ranges["end_ns"].to_numpy()
    parents = ranges["parent_id"].to_numpy()
    launch = ops["launch_start_ns"].to_numpy()
    op_groups = ops.groupby(["pid", "launch_tid"], sort=False).indices
    for key, rows in ranges.iloc[nested].groupby(["pid", "tid"], sort=False).indices.items():
        op_rows = op_groups.get(key)
        if op_rows is None:
            continue
        range_ids = nested[rows]
        times = launch[op_rows]
        pick = np.searchsorted(starts[range_ids], times, side="right") - 1
        current = np.where((pick >= 0) & (times >= 0), range_ids[np.maximum(pick, 0)], -1)
        while True:
            stale = current >= 0
            stale[stale] = ends[current[stale]] < times[stale]
            if not stale.any():
                break
            current[stale] = parents[current[stale]]
        result[op_rows] = current
    return result
