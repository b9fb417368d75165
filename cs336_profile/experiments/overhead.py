"""What the NVTX annotations cost: one model whose measured steps switch the annotations on and off.

Steps alternate in ABBA blocks (annotated, plain, plain, annotated, ...) inside one process and
on one model, so drift in clocks, temperature or neighbouring load falls on both sides alike;
the overhead is the ratio of the median step times (launch-bound steps have rare slow outliers).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pandas as pd

from cs336_profile.annotate import annotations
from cs336_profile.bench import free_device_memory, prepare_workload, run_step, step_row
from cs336_profile.config import RunConfig
from cs336_profile.contract import step_range_name

SUMMARY_KEYS = ["size", "context_length", "mode", "dtype", "compile"]


def is_annotated_step(index: int) -> bool:
    """ABBA order: steps 0 and 3 of every block of four are annotated."""
    return index % 4 in (0, 3)


def alternating_steps(run: RunConfig) -> Iterator[dict]:
    """Per-step rows of one model, each yielded as its step ends (an interrupted run keeps them):
    warm-up steps (annotated, no rows), then `run.measured_steps` ABBA steps."""
    workload = prepare_workload(run)
    try:
        with annotations(True):
            for index in range(run.warmup_steps):
                run_step(run, workload, step_range_name(index, measured=False))
        for index in range(run.measured_steps):
            annotated = is_annotated_step(index)
            with annotations(annotated):
                record = run_step(run, workload, step_range_name(index, measured=True))
            yield step_row(replace(run, nvtx_annotations=annotated), 0, True, index, record)
    finally:
        del workload
        free_device_memory(run.device)


def overhead_rows(step_rows: list[dict]) -> list[dict]:
    """Per configuration: median step and forward times with and without annotations, overhead in %."""
    if not step_rows:
        return []
    steps = pd.DataFrame(step_rows)
    rows = []
    for key, group in steps.groupby(SUMMARY_KEYS, sort=False):
        medians = group.groupby("nvtx_annotations")[["step_ms", "forward_ms"]].median()
        if len(medians) < 2:
            continue
        row = dict(zip(SUMMARY_KEYS, key)) | {"steps_each": int(group["nvtx_annotations"].value_counts().min())}
        for part in ("step", "forward"):
            annotated, plain = medians.loc[True, f"{part}_ms"], medians.loc[False, f"{part}_ms"]
            row |= {f"annotated_{part}_ms_median": float(annotated), f"plain_{part}_ms_median": float(plain),
                    f"{part}_overhead_pct": float((annotated / plain - 1) * 100)}
        rows.append(row)
    return rows
