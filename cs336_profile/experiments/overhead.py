"""What the NVTX annotations cost: the same configuration with and without them.

Runs alternate (annotated, plain, annotated, plain, ...) so that drift in clocks or temperature
falls on both sides; the overhead is the ratio of the median step times.
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from cs336_profile.bench import ConfigResult
from cs336_profile.config import RunConfig
from cs336_profile.results import STATUS_OK


def overhead_runs(base_runs: list[RunConfig], rounds: int) -> list[RunConfig]:
    """Each base run `rounds` times with annotations and `rounds` times without, alternating."""
    return [replace(run, nvtx_annotations=annotated)
            for run in base_runs for _ in range(rounds) for annotated in (True, False)]


def overhead_rows(results: list[ConfigResult]) -> list[dict]:
    """Per configuration: median step and forward times over all measured steps with and without
    annotations, and the overhead in % (medians: launch-bound steps have rare slow outliers)."""
    steps = pd.DataFrame([row for result in results if result.summary["status"] == STATUS_OK
                          for row in result.steps if row["step_kind"] == "measured"])
    if steps.empty:
        return []
    keys = ["size", "context_length", "mode", "dtype", "compile"]
    rows = []
    for key, group in steps.groupby(keys, sort=False):
        medians = group.groupby("nvtx_annotations")[["step_ms", "forward_ms"]].median()
        if len(medians) < 2:
            continue
        row = dict(zip(keys, key)) | {"measured_steps_each": int(group["nvtx_annotations"].value_counts().min())}
        for part in ("step", "forward"):
            annotated, plain = medians.loc[True, f"{part}_ms"], medians.loc[False, f"{part}_ms"]
            row |= {f"annotated_{part}_ms_median": float(annotated), f"plain_{part}_ms_median": float(plain),
                    f"{part}_overhead_pct": float((annotated / plain - 1) * 100)}
        rows.append(row)
    return rows
