"""What the NVTX annotations cost: the same configuration with and without them.

Runs alternate (annotated, plain, annotated, plain, ...) so that drift in clocks or temperature
falls on both sides; the overhead is the ratio of the mean step times.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from cs336_profile.bench import ConfigResult
from cs336_profile.config import RunConfig
from cs336_profile.results import STATUS_OK


def overhead_runs(base_runs: list[RunConfig], rounds: int) -> list[RunConfig]:
    """Each base run `rounds` times with annotations and `rounds` times without, alternating."""
    return [replace(run, nvtx_annotations=annotated)
            for run in base_runs for _ in range(rounds) for annotated in (True, False)]


def overhead_rows(results: list[ConfigResult]) -> list[dict]:
    """Per configuration: mean step and forward times with and without annotations, overhead in %."""
    groups: dict[tuple, dict[bool, list[dict]]] = {}
    for result in results:
        row = result.summary
        if row["status"] != STATUS_OK:
            continue
        key = (row["size"], row["context_length"], row["mode"], row["dtype"], row["compile"])
        groups.setdefault(key, {True: [], False: []})[row["nvtx_annotations"]].append(row)
    rows = []
    for (size, context_length, mode, dtype, compiled), by_flag in groups.items():
        if not (by_flag[True] and by_flag[False]):
            continue
        row = {"size": size, "context_length": context_length, "mode": mode, "dtype": dtype, "compile": compiled,
               "rounds": len(by_flag[True])}
        for part in ("step", "forward"):
            annotated = float(np.mean([r[f"{part}_ms_mean"] for r in by_flag[True]]))
            plain = float(np.mean([r[f"{part}_ms_mean"] for r in by_flag[False]]))
            row |= {f"annotated_{part}_ms": annotated, f"plain_{part}_ms": plain,
                    f"{part}_overhead_pct": (annotated / plain - 1) * 100}
        rows.append(row)
    return rows
