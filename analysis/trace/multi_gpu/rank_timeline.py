"""What the communication timeline draws: one measured step on every rank, on one clock — each
rank's streams with their kernels marked compute or communication, under the rank's phase ranges.

The step is the first measured step that every rank ran. Kernels are merged into bars as in
:mod:`analysis.trace.step_timeline` (per rank and stream, each rank within its share of the bar budget),
so the record stays small whatever the trace.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from analysis.core.codes import counted_rows
from analysis.core.phases import LabelledOps
from analysis.trace.step_timeline import MAX_BARS, NS_PER_MS, bounded_bars, milliseconds
from analysis.trace.summary_schema import RankTimelineRecord

COMPUTE, COMMUNICATION = "compute", "communication"


def rank_timeline(runs: dict[str, np.ndarray], steps: pd.Index, kernels_within: Callable[[int, int], pd.DataFrame],
                  ranks: pd.DataFrame, labelled: LabelledOps) -> RankTimelineRecord | None:
    """The record (null with fewer than two ranks or no measured step they all ran): ``title``
    (the step, or ``whole capture`` in a trace without steps), ``duration_ms``, ``bars`` (``rank,
    stream, kind, start_ms, dur_ms``; ``kind`` is compute or communication; ms from the step's
    start, its first phase range or kernel on any rank) and ``phases`` (``rank, phase, start_ms,
    dur_ms``). ``runs`` are the kernels' runs (:func:`analysis.trace.multi_gpu.ranks.kernel_runs`,
    whose ``step`` codes number ``steps``), which give the step and its window;
    ``kernels_within(start, end)`` the kernel rows, with ``collective_columns`` and ``end_ns``,
    that start and end inside a window: only the step's window's kernels are read."""
    code = _common_step(runs, steps, ranks)
    if code is None:
        return None
    step = str(steps[code])
    rank_of = ranks.set_index(["pid", "device_id"])["rank"]
    in_step = runs["measured"] & (runs["step"] == code)
    ranges = labelled.phase_ranges
    ranges = ranges[(ranges["step"] == step).to_numpy()].merge(ranks[["pid", "rank"]], on="pid")
    start = int(min(runs["start_ns"][in_step].min(), ranges["start_ns"].min() if len(ranges) else np.inf))
    end = int(max(runs["end_ns"][in_step].max(), ranges["end_ns"].max() if len(ranges) else -np.inf))
    during = kernels_within(start, end)[["pid", "device_id", "stream_id", "start_ns", "end_ns", "is_communication"]]
    during = during.assign(
        rank=rank_of.reindex(pd.MultiIndex.from_frame(during[["pid", "device_id"]])).to_numpy(),
        category=np.where(during["is_communication"], COMMUNICATION, COMPUTE))
    during = during[during["rank"].notna()]
    per_rank = MAX_BARS // len(ranks)
    bars = [bounded_bars(rows, end - start, per_rank).assign(rank=rank)
            for rank, rows in during.groupby("rank", sort=True)]
    bars = pd.concat(bars, ignore_index=True)
    return {
        "title": str(step) or "whole capture",
        "duration_ms": (end - start) / NS_PER_MS,
        "bars": {"rank": [int(r) for r in bars["rank"]], "stream": [int(s) for s in bars["stream_id"]],
                 "kind": [str(c) for c in bars["category"]], "start_ms": milliseconds(bars["start_ns"] - start),
                 "dur_ms": milliseconds(bars["end_ns"] - bars["start_ns"])},
        "phases": {"rank": [int(r) for r in ranges["rank"]], "phase": [str(p) for p in ranges["phase"]],
                   "start_ms": milliseconds(ranges["start_ns"] - start), "dur_ms": milliseconds(ranges["cpu_dur_ns"])},
    }


def _common_step(runs: dict[str, np.ndarray], steps: pd.Index, ranks: pd.DataFrame) -> int | None:
    """The code (among ``steps``) of the lowest-numbered measured step name that every rank has
    kernels in; that of ``""`` (the whole capture) when the measured kernels carry no step names."""
    if len(ranks) < 2:
        return None
    measured = runs["measured"]
    pairs = counted_rows([runs[column][measured] for column in ("step", "pid", "device_id")])[0]
    codes, counts = np.unique(pairs[pairs[:, 0] >= 0, 0], return_counts=True)  # the ranks of each step
    shared = [int(code) for code, count in zip(codes, counts) if count == len(ranks)]
    if [str(steps[code]) for code in shared] == [""]:
        return shared[0]
    shared = [code for code in shared if str(steps[code])]
    number = lambda name: int(name.rsplit("_", 1)[-1]) if name.rsplit("_", 1)[-1].isdigit() else -1  # noqa: E731
    return min(shared, key=lambda code: number(str(steps[code]))) if shared else None
