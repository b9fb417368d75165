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

SAMPLES_TABLE, NAMES_TABLE = "GPU_METRICS", "TARGET_INFO_GPU_METRICS"
SAMPLE_COLUMNS = ("timestamp", "typeId", "metricId", "value")
# summary key -> nsys metric name
METRICS = {
    "sm_active_pct": "SMs Active [Throughput %]",
    "tensor_active_pct": "Tensor Active [Throughput %]",
    "dram_read_pct": "DRAM Read Bandwidth [Throughput %]",
    "dram_write_pct": "DRAM Write Bandwidth [Throughput %]",
}


def read_gpu_metrics(path: str | os.PathLike, inputs: InputCache = InputCache()) -> pd.DataFrame | None:
    """Samples of :data:`METRICS`: ``time_ns``, ``gpu`` (nsys's typeId), ``metric`` (our key),
    ``value``; None when the export has no GPU metrics tables."""
    with opened_input(Path(path), inputs) as database, connect_readonly(database) as conn:
        schema = read_schema(conn, (SAMPLES_TABLE, NAMES_TABLE))
        if not set(SAMPLE_COLUMNS) <= set(schema.get(SAMPLES_TABLE, {})) \
                or not {"typeId", "metricId", "metricName"} <= set(schema.get(NAMES_TABLE, {})):
            return None
        names = pd.read_sql_query(f"SELECT DISTINCT typeId, metricId, metricName FROM {NAMES_TABLE}", conn)
        names = names[names["metricName"].isin(METRICS.values())]
        if names.empty:
            return pd.DataFrame(columns=["time_ns", "gpu", "metric", "value"])
        ids = ", ".join(str(int(i)) for i in names["metricId"].unique())
        # nsys declares the samples' values INTEGER NOT NULL: read as integer columns, not row by row
        samples = pd.DataFrame(read_ints(conn, schema, SAMPLES_TABLE, SAMPLE_COLUMNS, f"WHERE metricId IN ({ids})"))
    keys = {name: key for key, name in METRICS.items()}
    samples = samples.merge(names, on=["typeId", "metricId"])
    return pd.DataFrame({"time_ns": samples["timestamp"].astype("int64"), "gpu": samples["typeId"].astype("int64"),
                         "metric": samples["metricName"].map(keys), "value": samples["value"].astype(float)})
