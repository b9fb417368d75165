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

import pandas as pd

from analysis.questions.nsys_inputs import NsysInputs

RESOLUTION_DIVISIONS = 2000  # finer than a pixel of the report's figure (7.5 in at 150 dpi)
MAX_BARS = 4000
NS_PER_MS = 1e6
MS_DIGITS = 6  # ns precision


def step_window(inputs: NsysInputs) -> tuple[str, int, int]:
    """(title, start_ns, end_ns) of the first measured step: from its first phase range start (or
    first op start) to its last op end; the whole run when there are no steps."""
    measured = inputs.ops["measured"].to_numpy()  # masks, not copies: the ops may be millions of rows
    steps = [s for s in inputs.ops["step"][measured].unique() if s]
    prefix = inputs.names.step_prefix
    step = min(steps, key=lambda name: int(name.removeprefix(prefix))) if steps else ""
    in_step = measured & (inputs.ops["step"] == step).to_numpy() if step else measured
    op_start, op_end = inputs.ops["start_ns"].to_numpy()[in_step].min(), inputs.ops["end_ns"].to_numpy()[in_step].max()
    ranges = inputs.phase_ranges[inputs.phase_ranges["step"] == step] if step else inputs.phase_ranges
    start = min(op_start, ranges["start_ns"].min()) if not ranges.empty else op_start
    end = max(op_end, ranges["end_ns"].max()) if not ranges.empty else op_end
    return (step or "whole capture"), int(start), int(end)


def merged_bars(ops: pd.DataFrame, resolution_ns: float) -> pd.DataFrame:
    """Bars ``stream_id, category, start_ns, end_ns``: consecutive ops of one stream and category
    whose gap is under ``resolution_ns`` become one bar."""
    ops = ops.sort_values(["stream_id", "start_ns"], kind="stable")
    previous_end = ops.groupby("stream_id")["end_ns"].transform(lambda ends: ends.cummax().shift())
    same_stream = ops["stream_id"].eq(ops["stream_id"].shift())
    same_category = ops["category"].astype(str).eq(ops["category"].astype(str).shift())
    joins = same_stream & same_category & (ops["start_ns"] - previous_end < resolution_ns)
    bar = (~joins).cumsum()
    return (ops.groupby(bar, sort=False)
            .agg(stream_id=("stream_id", "first"), category=("category", "first"), start_ns=("start_ns", "min"),
                 end_ns=("end_ns", "max"))
            .reset_index(drop=True))


def slotted_bars(bars: pd.DataFrame, slot_ns: float) -> pd.DataFrame:
    """One bar per stream, slot of ``slot_ns`` (by start time) and category present in it,
    spanning that category's bars in the slot."""
    slots = (bars["start_ns"] // slot_ns).astype("int64").rename("slot")
    return (bars.groupby([bars["stream_id"], slots, bars["category"].astype(str)], sort=True)
            .agg(start_ns=("start_ns", "min"), end_ns=("end_ns", "max"))
            .reset_index()[["stream_id", "category", "start_ns", "end_ns"]])


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
    ops = inputs.ops[(inputs.ops["start_ns"] >= start_ns) & (inputs.ops["end_ns"] <= end_ns)]
    bars = bounded_bars(ops, end_ns - start_ns)
    ranges = inputs.phase_ranges
    ranges = ranges[(ranges["start_ns"] >= start_ns) & (ranges["end_ns"] <= end_ns)]
    ms = milliseconds
    return {
        "title": title,
        "duration_ms": (end_ns - start_ns) / NS_PER_MS,
        "bars": {"stream": [int(s) for s in bars["stream_id"]], "category": [str(c) for c in bars["category"]],
                 "start_ms": ms(bars["start_ns"] - start_ns), "dur_ms": ms(bars["end_ns"] - bars["start_ns"])},
        "phases": {"phase": [str(p) for p in ranges["phase"]], "start_ms": ms(ranges["start_ns"] - start_ns),
                   "dur_ms": ms(ranges["cpu_dur_ns"])},
    }
