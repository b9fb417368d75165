"""What the report's timeline draws: the GPU operations of the first measured step on their
streams, with their categories, under the step's phase ranges; part of the trace summary.

Operations closer together than :data:`RESOLUTION_DIVISIONS`-th of the window, on one stream and
of one category, are merged into one bar (no drawing can tell them apart). When more than
:data:`MAX_BARS` bars remain (short kernels of alternating categories), each stream is cut into
slots of that resolution and each category present in a slot becomes one bar spanning its
operations there (drawn in category order, as the operations would be); the slots widen until the
bars fit, so the size of a summary stays bounded whatever the trace.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.core.codes import run_starts
from analysis.load.tables import op_ends, ops_within
from analysis.trace.nsys_inputs import NsysInputs

RESOLUTION_DIVISIONS = 2000  # finer than a pixel of the report's figure (7.5 in at 150 dpi)
MAX_BARS = 4000
NS_PER_MS = 1e6
MS_DIGITS = 6  # ns precision


def step_window(inputs: NsysInputs) -> tuple[str, int, int]:
    """(title, start_ns, end_ns) of the first measured step that holds operations: from its first
    phase range start (or first op start) to its last op end; the whole run when there are no steps."""
    measured = inputs.ops["measured"].to_numpy()  # masks, not copies: the ops may be millions of rows
    steps = inputs.structure.steps
    if inputs.has_steps:  # a step range may hold ranges but launch nothing
        holding = set(inputs.ops["step"].array[measured].unique())
        steps = steps[steps["measured"].to_numpy(dtype=bool) & steps["name"].isin(holding).to_numpy()]
    else:
        steps = steps.iloc[:0]
    step = str(steps.sort_values("start_ns", kind="stable")["name"].iat[0]) if len(steps) else ""
    in_step = measured & (inputs.ops["step"] == step).to_numpy() if step else measured
    op_start, op_end = inputs.ops["start_ns"].to_numpy()[in_step].min(), op_ends(inputs.ops, in_step).max()
    ranges = inputs.phase_ranges[inputs.phase_ranges["step"] == step] if step else inputs.phase_ranges
    start = min(op_start, ranges["start_ns"].min()) if not ranges.empty else op_start
    end = max(op_end, ranges["end_ns"].max()) if not ranges.empty else op_end
    return (step or "whole capture"), int(start), int(end)


def merged_bars(ops: pd.DataFrame, resolution_ns: float) -> pd.DataFrame:
    """Bars ``stream_id, category, start_ns, end_ns``: consecutive ops of one stream and category
    whose gap is under ``resolution_ns`` become one bar.

    Ops sorted by stream, then start: an op joins the bar before it when it is on the same stream,
    of the same category, and starts less than ``resolution_ns`` after the latest end so far on
    its stream."""
    order = np.lexsort((ops["start_ns"].to_numpy(), ops["stream_id"].to_numpy()))
    stream, start, end = (ops[column].to_numpy()[order] for column in ("stream_id", "start_ns", "end_ns"))
    category = ops["category"].array[order]
    category_code = pd.factorize(category)[0]
    stream_first = run_starts(stream)
    reach = np.empty_like(end)
    for first, stop in zip(stream_first, np.r_[stream_first[1:], len(end)]):
        reach[first:stop] = np.maximum.accumulate(end[first:stop])
    joins = np.zeros(len(end), dtype=bool)
    joins[1:] = (stream[1:] == stream[:-1]) & (category_code[1:] == category_code[:-1]) & (start[1:] - reach[:-1] < resolution_ns)
    bar_first = np.flatnonzero(~joins)
    return pd.DataFrame({
        "stream_id": stream[bar_first],
        "category": category[bar_first],
        "start_ns": start[bar_first],
        "end_ns": np.maximum.reduceat(end, bar_first) if len(end) else end,
    })


def slotted_bars(bars: pd.DataFrame, slot_ns: float) -> pd.DataFrame:
    """One bar per stream, slot of ``slot_ns`` (by start time) and category present in it,
    spanning that category's bars in the slot; sorted by stream, slot and category name."""
    slot = (bars["start_ns"] // slot_ns).astype("int64").to_numpy()
    category, names = _sorted_codes(bars["category"].astype(str))
    stream, start, end = (bars[column].to_numpy() for column in ("stream_id", "start_ns", "end_ns"))
    order = np.lexsort((category, slot, stream))
    stream, slot, category, start, end = stream[order], slot[order], category[order], start[order], end[order]
    first = np.flatnonzero(np.r_[True, (stream[1:] != stream[:-1]) | (slot[1:] != slot[:-1]) | (category[1:] != category[:-1])])
    return pd.DataFrame({
        "stream_id": stream[first],
        "category": pd.Series(names[category[first]], dtype=str),
        "start_ns": np.minimum.reduceat(start, first),
        "end_ns": np.maximum.reduceat(end, first),
    })


def _sorted_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``values`` numbered in the sorted order of the distinct values, and those values."""
    codes, distinct = pd.factorize(values)
    distinct = np.asarray(distinct, dtype=object)
    by_value = np.argsort(distinct, kind="stable")
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[by_value] = np.arange(len(distinct))
    return rank[codes], distinct[by_value]


def bounded_bars(ops: pd.DataFrame, window_ns: float, max_bars: int = MAX_BARS) -> pd.DataFrame:
    """``ops`` (``stream_id, category, start_ns, end_ns``) as at most ``max_bars`` bars of a window
    ``window_ns`` long: merged at :data:`RESOLUTION_DIVISIONS`-th of the window, then slotted."""
    resolution = window_ns / RESOLUTION_DIVISIONS
    merged = bars = merged_bars(ops, resolution)
    slot = resolution
    while len(bars) > max_bars:  # at most streams × categories × window / slot bars: ends as slots widen
        bars = slotted_bars(merged, slot)
        slot *= 2
    return bars


def milliseconds(values: pd.Series) -> list[float]:
    """ns values as ms rounded to ns precision, for the JSON."""
    return [round(v, MS_DIGITS) for v in (values / NS_PER_MS).tolist()]


def step_timeline(inputs: NsysInputs) -> dict | None:
    """The timeline record (null when the trace has no measured operations): ``title``,
    ``duration_ms``, ``bars`` (columns ``stream``, ``category``, ``start_ms``, ``dur_ms``; ms from
    the window's start) and ``phases`` (``phase``, ``start_ms``, ``dur_ms``)."""
    if not inputs.ops["measured"].any():
        return None
    title, start_ns, end_ns = step_window(inputs)
    in_window = ops_within(inputs.ops, start_ns, end_ns)
    ops = inputs.ops.iloc[in_window][["stream_id", "category", "start_ns"]].assign(end_ns=op_ends(inputs.ops, in_window))
    bars = bounded_bars(ops, end_ns - start_ns)
    ranges = inputs.phase_ranges
    ranges = ranges[(ranges["start_ns"] >= start_ns) & (ranges["end_ns"] <= end_ns)]
    ranges = ranges.drop_duplicates(["pid", "phase", "start_ns", "end_ns"])  # a range's passes on several GPUs: one box
    ms = milliseconds
    return {
        "title": title,
        "duration_ms": (end_ns - start_ns) / NS_PER_MS,
        "bars": {"stream": [int(s) for s in bars["stream_id"]], "category": [str(c) for c in bars["category"]],
                 "start_ms": ms(bars["start_ns"] - start_ns), "dur_ms": ms(bars["end_ns"] - bars["start_ns"])},
        "phases": {"phase": [str(p) for p in ranges["phase"]], "start_ms": ms(ranges["start_ns"] - start_ns),
                   "dur_ms": ms(ranges["cpu_dur_ns"])},
    }
