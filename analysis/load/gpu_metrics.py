"""Nsight's GPU metrics samples (``GPU_METRICS``, recorded with ``--gpu-metrics-devices``), named
through ``TARGET_INFO_GPU_METRICS``. An optional table: :func:`read_gpu_metrics` returns None
when the export lacks it."""
from __future__ import annotations

import sqlite3

import pandas as pd

from analysis.load.export_map import GPU_METRIC_NAMES, GPU_METRICS
from analysis.load.schema import read_columns
from analysis.load.tables import MAX_TIME_NS, drop_repeats, keep_rows

SAMPLE_COLUMNS = ("time_ns", "gpu", "metric_id", "value")
# summary key -> nsys metric name
METRICS = {
    "sm_active_pct": "SMs Active [Throughput %]",
    "tensor_active_pct": "Tensor Active [Throughput %]",
    "dram_read_pct": "DRAM Read Bandwidth [Throughput %]",
    "dram_write_pct": "DRAM Write Bandwidth [Throughput %]",
}


def read_gpu_metrics(conn: sqlite3.Connection, schema: dict, notes: list[str]) -> pd.DataFrame | None:
    """Samples of :data:`METRICS` in an open export (``schema``: :func:`analysis.load.schema.read_schema`):
    ``time_ns``, ``gpu`` (nsys's typeId), ``metric`` (our key), ``value``; None when the export has
    no GPU metrics tables.

    Samples no GPU reports are left out, with a note in ``notes`` counting them: a value that is
    missing, not an integer or outside 0–100 %, a time past 2^53 ns; so are later
    copies of a sample listed twice (same time, GPU and metric)."""
    names_columns = GPU_METRIC_NAMES.nsys_names(schema, ("gpu", "metric_id", "metric"))
    if any(GPU_METRICS.column(schema, column) is None for column in SAMPLE_COLUMNS) \
            or any(GPU_METRIC_NAMES.column(schema, column) is None for column in ("gpu", "metric_id", "metric")):
        return None
    names = pd.read_sql_query(f"SELECT DISTINCT {', '.join(names_columns)} FROM {GPU_METRIC_NAMES.in_export(schema)}",
                              conn).set_axis(["gpu", "metric_id", "metric"], axis=1)
    names = names[names["metric"].isin(METRICS.values())]
    names = names.assign(gpu=pd.to_numeric(names["gpu"], errors="coerce"),
                         metric_id=pd.to_numeric(names["metric_id"], errors="coerce")).dropna()
    if names.empty:
        return pd.DataFrame(columns=["time_ns", "gpu", "metric", "value"])
    ids = ", ".join(str(int(i)) for i in names["metric_id"].unique())
    samples = pd.DataFrame(read_columns(conn, schema, GPU_METRICS, SAMPLE_COLUMNS,
                                        f"WHERE {GPU_METRICS.column(schema, 'metric_id')} IN ({ids})"))
    samples = drop_repeats(samples, ["time_ns", "gpu", "metric_id"], notes, "GPU metrics samples")
    # nsys stamps the first samples slightly before the session began: a negative time is fine.
    usable = samples["time_ns"].abs().lt(MAX_TIME_NS) & samples["value"].between(0, 100)
    samples = keep_rows(samples, usable.to_numpy(), notes, "GPU metrics samples whose value is missing, not an "
                        "integer or a percentage outside 0–100, or whose time is past 2^53 ns")
    keys = {name: key for key, name in METRICS.items()}
    samples = samples.merge(names.astype({"gpu": "int64", "metric_id": "int64"}), on=["gpu", "metric_id"])
    return pd.DataFrame({"time_ns": samples["time_ns"].astype("int64"), "gpu": samples["gpu"].astype("int64"),
                         "metric": samples["metric"].map(keys), "value": samples["value"].astype(float)})
