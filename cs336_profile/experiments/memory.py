"""Memory of one model size: peaks per context length, mode and dtype, and allocator snapshots.

Peaks come from the bench (the caching allocator's peak allocated bytes per phase). For the
snapshot context length in fp32, the measured step is recorded with
`torch.cuda.memory._record_memory_history`; the snapshot is saved as a pickle for
pytorch.org/memory_viz, and read here into allocated-memory-over-time points and the largest
allocations with the model code that made them.
"""
from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from cs336_profile.bench import run_config
from cs336_profile.config import SIZES, RunConfig
from cs336_profile.contract import FP32_BYTES, MEMORY, MEMORY_ACTIVATION, MEMORY_LARGEST_ALLOCATIONS, MEMORY_TIMELINE, MIB

PACKAGE = "cs336_profile"


@dataclass(frozen=True)
class MemoryStudy:
    """Which runs the memory experiment makes."""

    size: str = "2.7B"
    context_lengths: tuple[int, ...] = (128, 256, 512)
    modes: tuple[str, ...] = ("forward", "train")
    dtypes: tuple[str, ...] = ("fp32", "bf16")
    snapshot_context_length: int = 128
    batch_size: int = 4
    device: str = "cuda"
    # One warm-up step creates AdamW's state, so the measured step is a steady-state step.
    warmup_steps: int = 1
    measured_steps: int = 1


def residual_activation_rows(size: str, context_lengths: tuple[int, ...], batch_size: int) -> list[dict]:
    """Size of one residual-stream activation (batch × context × d_model floats) in fp32."""
    d_model = SIZES[size].d_model
    rows = []
    for context_length in context_lengths:
        size_bytes = batch_size * context_length * d_model * FP32_BYTES
        rows.append({
            "size": size, "batch_size": batch_size, "context_length": context_length, "d_model": d_model,
            "bytes": size_bytes, "mib": size_bytes / MIB,
            "derivation": f"{batch_size} × {context_length} × {d_model} × {FP32_BYTES} bytes = {size_bytes:,} bytes"
                          f" = {size_bytes / MIB:.2f} MB (bytes / 1024²)",
        })
    return rows


class MemoryRecorder:
    """Records the allocator's history while its context is open; keeps the snapshot and baseline."""

    def __init__(self) -> None:
        self.snapshot: dict | None = None
        self.baseline_bytes = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        self.baseline_bytes = torch.cuda.memory_allocated()  # allocated before recording began
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python")
        try:
            yield
        finally:
            self.snapshot = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)


def _trace_events(snapshot: dict) -> pd.DataFrame:
    """Allocation and free events of the first device that has any, in order."""
    traces = [trace for trace in snapshot.get("device_traces", []) if trace]
    events = pd.DataFrame(traces[0] if traces else [], columns=["action", "size", "frames", "time_us"])
    return events[events["action"].isin(["alloc", "free_completed"])].reset_index(drop=True)


def allocated_timeline(snapshot: dict, baseline_bytes: int, max_points: int = 2000) -> pd.DataFrame:
    """Allocated bytes after each event, reduced to at most `max_points` (the maximum of each chunk)."""
    events = _trace_events(snapshot)
    signed = np.where(events["action"] == "alloc", events["size"], -events["size"]).astype(np.int64)
    allocated = baseline_bytes + np.cumsum(signed)
    starts = np.unique(np.linspace(0, len(allocated), num=min(max_points, len(allocated)), endpoint=False).astype(int))
    if not len(starts):
        return pd.DataFrame(columns=["event_index", "time_us", "allocated_bytes"])
    peaks = np.maximum.reduceat(allocated, starts)
    return pd.DataFrame({"event_index": starts, "time_us": events["time_us"].to_numpy()[starts],
                         "allocated_bytes": peaks})


def _model_frames(frames: list[dict]) -> list[str]:
    """`file:line in function` for the frames of this package, innermost first."""
    return [f"{Path(f['filename']).name}:{f['line']} in {f['name']}"
            for f in frames if PACKAGE in Path(f["filename"]).parts]


def largest_allocations(snapshot: dict, top: int = 10) -> pd.DataFrame:
    """The largest allocations, grouped by size and the model code that made them."""
    allocs = _trace_events(snapshot).query("action == 'alloc'")
    stacks = allocs["frames"].map(_model_frames)
    table = pd.DataFrame({
        "size_bytes": allocs["size"].astype(np.int64),
        "site": stacks.map(lambda frames: frames[0] if frames else "(outside the model code)"),
        "stack": stacks.map(" <- ".join),
    })
    grouped = (table.groupby(["size_bytes", "site", "stack"], as_index=False).size()
               .rename(columns={"size": "count"})
               .sort_values(["size_bytes", "count"], ascending=False).head(top))
    grouped.insert(1, "size_mib", grouped["size_bytes"] / MIB)
    return grouped.reset_index(drop=True)


def snapshot_name(run: RunConfig) -> str:
    return f"memory_{run.size}_ctx{run.context_length}_{run.mode}_{run.dtype}"


def run_memory_study(study: MemoryStudy, snapshot_dir: Path, progress: bool = True,
                     on_run: Callable[[dict[str, list[dict]]], None] | None = None) -> dict[str, list[dict]]:
    """Run the study; return results tables by name (peaks, timeline, largest allocations, activations).

    Snapshots (cuda only) are written to `snapshot_dir/<name>.pickle`. `on_run` is called with the
    tables so far after each run (to save partial results).
    """
    runs = [RunConfig(size=study.size, context_length=ctx, batch_size=study.batch_size, mode=mode, dtype=dtype,
                      device=study.device, warmup_steps=study.warmup_steps, measured_steps=study.measured_steps)
            for ctx in study.context_lengths for mode in study.modes for dtype in study.dtypes]
    peaks, timeline, largest = [], [], []
    for index, run in enumerate(tqdm(runs, desc="memory", disable=not progress)):
        record = study.device == "cuda" and run.context_length == study.snapshot_context_length and run.dtype == "fp32"
        recorder = MemoryRecorder()
        result = run_config(run, config_index=index, around_measured_steps=recorder if record else nullcontext)
        peaks.append(result.summary)
        if recorder.snapshot is not None:
            timeline, largest = _record_snapshot(run, recorder, snapshot_dir, timeline, largest)
        if on_run is not None:
            on_run(_tables(study, peaks, timeline, largest))
    return _tables(study, peaks, timeline, largest)


def _record_snapshot(run: RunConfig, recorder: MemoryRecorder, snapshot_dir: Path, timeline: list[dict],
                     largest: list[dict]) -> tuple[list[dict], list[dict]]:
    """Save a run's allocator snapshot; return the timeline and largest-allocation rows with its own added."""
    name = snapshot_name(run)
    snapshot_dir.mkdir(parents=True, exist_ok=True)
    with open(snapshot_dir / f"{name}.pickle", "wb") as file:
        pickle.dump(recorder.snapshot, file)
    labels = {"snapshot": name, "mode": run.mode, "context_length": run.context_length, "dtype": run.dtype}
    timeline = timeline + [labels | row for row in allocated_timeline(recorder.snapshot, recorder.baseline_bytes)
                           .to_dict("records")]
    if run.mode == "forward":
        largest = largest + [labels | row for row in largest_allocations(recorder.snapshot).to_dict("records")]
    return timeline, largest


def _tables(study: MemoryStudy, peaks: list[dict], timeline: list[dict], largest: list[dict]) -> dict[str, list[dict]]:
    return {
        MEMORY: peaks,
        MEMORY_TIMELINE: timeline,
        MEMORY_LARGEST_ALLOCATIONS: largest,
        MEMORY_ACTIVATION: residual_activation_rows(study.size, study.context_lengths, study.batch_size),
    }
