"""Nsight's GPU metrics samples (``GPU_METRICS``, recorded with ``--gpu-metrics-devices``), named
through ``TARGET_INFO_GPU_METRICS``. An optional table: :func:`read_gpu_metrics` returns None
when the export lacks it. :func:`read_cuda_devices` says which GPU each process's CUDA device is."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd

from analysis.load.export_map import CUDA_DEVICES, GPU_METRIC_NAMES, GPU_METRICS
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


# The GPU a sample is of: the low byte of nsys's typeId, nsys's own id of the GPU (TARGET_INFO_CUDA_DEVICE's gpuId).
GPU_ID_MASK = 0xFF


def read_cuda_devices(conn: sqlite3.Connection, schema: dict) -> pd.DataFrame:
    """``pid``, ``device_id`` (the CUDA device as the process numbers it, a kernel's) and ``gpu``
    (nsys's id of that GPU, a GPU metrics sample's); empty when the export does not say (then
    the two are taken to be alike)."""
    columns = ["pid", "device_id", "gpu"]
    table = CUDA_DEVICES.in_export(schema)
    if table is None or any(CUDA_DEVICES.column(schema, column) is None for column in columns):
        return pd.DataFrame({column: pd.Series(dtype=np.int64) for column in columns})
    rows = conn.execute(f"SELECT DISTINCT {', '.join(CUDA_DEVICES.nsys_names(schema, tuple(columns)))} FROM {table}").fetchall()
    found = pd.DataFrame(rows, columns=columns).apply(pd.to_numeric, errors="coerce").dropna()
    return found.astype(np.int64).reset_index(drop=True)


def read_gpu_metrics(conn: sqlite3.Connection, schema: dict, notes: list[str]) -> pd.DataFrame | None:
    """Samples of :data:`METRICS` in an open export (``schema``: :func:`analysis.load.schema.read_schema`):
    ``time_ns``, ``gpu`` (nsys's id of the GPU: the low byte of its typeId), ``metric`` (our key),
    ``value``; None when the export has no GPU metrics tables.

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
    return pd.DataFrame({"time_ns": samples["time_ns"].astype("int64"), "gpu": samples["gpu"].astype("int64") & GPU_ID_MASK,
                         "metric": samples["metric"].map(keys), "value": samples["value"].astype(float)})
