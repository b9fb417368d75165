"""Nsight's GPU metrics samples (``GPU_METRICS``, recorded with ``--gpu-metrics-devices``), named
through ``TARGET_INFO_GPU_METRICS``. An optional table: :func:`read_gpu_metrics` returns None
when the export lacks it."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from analysis.load.input_cache import InputCache
from analysis.load.inputs import connect_readonly, opened_input
from analysis.load.schema import read_ints, read_schema
from analysis.load.tables import MAX_TIME_NS, drop_repeats, keep_rows

SAMPLES_TABLE, NAMES_TABLE = "GPU_METRICS", "TARGET_INFO_GPU_METRICS"
SAMPLE_COLUMNS = ("timestamp", "typeId", "metricId", "value")
# summary key -> nsys metric name
METRICS = {
    "sm_active_pct": "SMs Active [Throughput %]",
    "tensor_active_pct": "Tensor Active [Throughput %]",
    "dram_read_pct": "DRAM Read Bandwidth [Throughput %]",
    "dram_write_pct": "DRAM Write Bandwidth [Throughput %]",
}


def read_gpu_metrics(path: str | os.PathLike, inputs: InputCache = InputCache(),
                     notes: list[str] | None = None) -> pd.DataFrame | None:
    """Samples of :data:`METRICS`: ``time_ns``, ``gpu`` (nsys's typeId), ``metric`` (our key),
    ``value``; None when the export has no GPU metrics tables.

    Samples no GPU reports are left out, with a note in ``notes`` counting them: a value that is
    missing, not an integer or outside 0–100 %, a time past 2^53 ns; so are later
    copies of a sample listed twice (same time, GPU and metric)."""
    with opened_input(Path(path), inputs) as database, connect_readonly(database) as conn:
        schema = read_schema(conn, (SAMPLES_TABLE, NAMES_TABLE))
        if not set(SAMPLE_COLUMNS) <= set(schema.get(SAMPLES_TABLE, {})) \
                or not {"typeId", "metricId", "metricName"} <= set(schema.get(NAMES_TABLE, {})):
            return None
        names = pd.read_sql_query(f"SELECT DISTINCT typeId, metricId, metricName FROM {NAMES_TABLE}", conn)
        names = names[names["metricName"].isin(METRICS.values())]
        names = names.assign(typeId=pd.to_numeric(names["typeId"], errors="coerce"),
                             metricId=pd.to_numeric(names["metricId"], errors="coerce")).dropna()
        if names.empty:
            return pd.DataFrame(columns=["time_ns", "gpu", "metric", "value"])
        ids = ", ".join(str(int(i)) for i in names["metricId"].unique())
        samples = pd.DataFrame(read_ints(conn, schema, SAMPLES_TABLE, SAMPLE_COLUMNS, f"WHERE metricId IN ({ids})"))
    notes = [] if notes is None else notes
    samples = drop_repeats(samples, ["timestamp", "typeId", "metricId"], notes, "GPU metrics samples")
    # nsys stamps the first samples slightly before the session began: a negative time is fine.
    usable = samples["timestamp"].abs().lt(MAX_TIME_NS) & samples["value"].between(0, 100)
    samples = keep_rows(samples, usable.to_numpy(), notes, "GPU metrics samples whose value is missing, not an "
                        "integer or a percentage outside 0–100, or whose time is past 2^53 ns")
    keys = {name: key for key, name in METRICS.items()}
    samples = samples.merge(names.astype({"typeId": "int64", "metricId": "int64"}), on=["typeId", "metricId"])
    return pd.DataFrame({"time_ns": samples["timestamp"].astype("int64"), "gpu": samples["typeId"].astype("int64"),
                         "metric": samples["metricName"].map(keys), "value": samples["value"].astype(float)})
