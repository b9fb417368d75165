"""GPU metrics per phase: means of the samples inside the measured phase windows only."""
from __future__ import annotations

import sqlite3

from analysis.core.phases import label_ops
from analysis.load import load_trace
from analysis.load.export_map import GPU_METRIC_NAMES, GPU_METRICS
from analysis.load.gpu_metrics import METRICS
from analysis.trace.gpu_metrics import metrics_per_phase
from tests.synthetic import build_export

GPU = 7
RANGES = [(name, start, end, 1, 1, 1, 59) for name, start, end in (
    ("warmup_0", 0, 100), ("forward", 10, 50), ("step_0", 200, 400), ("forward", 210, 260), ("backward", 270, 390))]


def _export(tmp_path, samples):
    path = build_export(tmp_path / "metrics.sqlite", kernels=[(215, 220, 212, 1, 1, 5)], ranges=RANGES)
    with sqlite3.connect(path) as conn:
        conn.execute(GPU_METRIC_NAMES.create_sql())
        conn.executemany(f"INSERT INTO {GPU_METRIC_NAMES.name} VALUES (?, ?, ?)",
                         [(GPU, i, name) for i, name in enumerate(["GPC Clock Frequency [MHz]", *METRICS.values()])])
        conn.execute(GPU_METRICS.create_sql())
        conn.executemany(f"INSERT INTO {GPU_METRICS.name} VALUES (?, ?, ?, ?)", [(t, GPU, m, v) for t, m, v in samples])
    return path


def test_phase_means_use_measured_windows_only(tmp_path):
    sm = 1  # "SMs Active": metric id 1 in this export
    samples = [(20, sm, 99), (220, sm, 10), (250, sm, 30), (265, sm, 77), (300, sm, 60), (380, sm, 80), (220, 0, 1980)]
    path = _export(tmp_path, samples)
    trace = load_trace(path)
    record = metrics_per_phase(trace.gpu_metrics, label_ops(trace).phase_ranges)
    assert record["available"]
    assert record["phases"]["forward"] == {"sm_active_pct": 20.0}  # the warm-up sample (99) is left out
    assert record["phases"]["backward"] == {"sm_active_pct": 70.0}  # 77 falls between the phases


def test_without_the_table_the_record_says_unavailable(tmp_path):
    path = build_export(tmp_path / "plain.sqlite", kernels=[(215, 220, 212, 1, 1, 5)], ranges=RANGES)
    assert load_trace(path).gpu_metrics is None
    assert metrics_per_phase(None, label_ops(load_trace(path)).phase_ranges) == \
        {"available": False, "samples_per_s": None, "phases": {}}
