"""A quick look into an export: the CPU span of each phase range of the measured steps.

The sweep records it next to the Python timer's figures as a check that the trace holds what the
runner measured (the analyzer does the full job, GPU projection and kernels included).
"""
from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd

from cs336_profile.contract import PHASES
from nsys_runs.export_schema import column_names, nvtx_name_sql, table_names

PUSH_POP_RANGE = 59  # NVTX_EVENTS.eventType of push/pop ranges


def measured_phase_spans_ms(export: str | Path) -> dict[str, float]:
    """Mean CPU span in ms of each phase range nested in a `step_<i>` range on the same thread.

    Returns {} when the export has no NVTX ranges.
    """
    with closing(sqlite3.connect(f"file:{Path(export)}?mode=ro", uri=True)) as connection:
        tables = table_names(connection)
        if "NVTX_EVENTS" not in tables:
            return {}
        name = nvtx_name_sql("e", column_names(connection, "NVTX_EVENTS"), tables)
        ranges = pd.read_sql_query(
            f'SELECT e.start AS start_ns, e."end" AS end_ns, e.globalTid AS thread, {name} AS name '
            f'FROM NVTX_EVENTS e WHERE e.eventType = {PUSH_POP_RANGE} AND e."end" IS NOT NULL',
            connection)
    steps = ranges[ranges["name"].str.fullmatch(r"step_\d+", na=False)]
    phases = ranges[ranges["name"].isin(PHASES)]
    pairs = phases.merge(steps, on="thread", suffixes=("", "_step"))
    inside = pairs[(pairs["start_ns"] >= pairs["start_ns_step"]) & (pairs["end_ns"] <= pairs["end_ns_step"])]
    spans_ns = (inside["end_ns"] - inside["start_ns"]).groupby(inside["name"]).mean()
    return (spans_ns / 1e6).to_dict()
