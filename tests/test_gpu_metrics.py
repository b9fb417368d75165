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
    labelled = label_ops(trace)
    record = metrics_per_phase(trace.gpu_metrics, labelled.phase_ranges, labelled.ops, trace.cuda_devices)
    assert record["available"]
    assert record["phases"]["forward"] == {"sm_active_pct": 20.0}  # the warm-up sample (99) is left out
    assert record["phases"]["backward"] == {"sm_active_pct": 70.0}  # 77 falls between the phases


def test_without_the_table_the_record_says_unavailable(tmp_path):
    path = build_export(tmp_path / "plain.sqlite", kernels=[(215, 220, 212, 1, 1, 5)], ranges=RANGES)
    assert load_trace(path).gpu_metrics is None
    labelled = label_ops(load_trace(path))
    assert metrics_per_phase(None, labelled.phase_ranges, labelled.ops, load_trace(path).cuda_devices) == \
        {"available": False, "samples_per_s": None, "phases": {}}


def _two_gpu_export(tmp_path, cuda_devices=None, name="two"):
    """Two processes, one a GPU (pid 1 on device 0, pid 2 on device 1), each a measured step with a
    forward [210, 260) and a backward [270, 390), pid 2's 1,050 ns later. Every 10 ns each GPU's
    ``SMs Active`` sample is 80 while its own process's step runs and 0 else (GPU 0 during pid 1's,
    GPU 1 during pid 2's). With ``cuda_devices`` (pid, device, GPU), a ``TARGET_INFO_CUDA_DEVICE``
    table says which GPU each process's device is."""
    ranges = [(name, start + 1000 * (pid - 1) + 50 * (pid - 1), end + 1000 * (pid - 1) + 50 * (pid - 1), pid, pid, pid, 59)
              for pid in (1, 2) for name, start, end in (("step_0", 200, 400), ("forward", 210, 260), ("backward", 270, 390))]
    kernels = [(215 + 1050 * (pid - 1), 220 + 1050 * (pid - 1), 212 + 1050 * (pid - 1), pid, pid, pid, "kernel_a", pid - 1, 7)
               for pid in (1, 2)]
    path = build_export(tmp_path / f"{name}.sqlite", kernels=kernels, ranges=ranges)
    with sqlite3.connect(path) as conn:
        conn.execute(GPU_METRIC_NAMES.create_sql())
        conn.executemany(f"INSERT INTO {GPU_METRIC_NAMES.name} VALUES (?, ?, ?)",
                         [((1 << 48) + gpu, 1, "SMs Active [Throughput %]") for gpu in (0, 1)])
        conn.execute(GPU_METRICS.create_sql())
        conn.executemany(f"INSERT INTO {GPU_METRICS.name} VALUES (?, ?, ?, ?)",
                         [(t, (1 << 48) + gpu, 1, 80 if 200 + 1050 * gpu <= t < 400 + 1050 * gpu else 0)
                          for gpu in (0, 1) for t in range(0, 2000, 10)])
        if cuda_devices:
            conn.execute("CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL)")
            conn.executemany("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, ?, ?)",
                             [(gpu, device, pid) for pid, device, gpu in cuda_devices])
    return path


def _sm_active(path) -> dict:
    trace = load_trace(path)
    labelled = label_ops(trace)
    record = metrics_per_phase(trace.gpu_metrics, labelled.phase_ranges, labelled.ops, trace.cuda_devices)
    return {phase: figures["sm_active_pct"] for phase, figures in record["phases"].items()}


def test_each_gpus_samples_fall_in_the_phases_that_ran_on_it(tmp_path):
    """Two ranks, one GPU each: the idle GPU 1's samples inside rank 0's phases are not rank 0's
    (pooled, they halved every phase's figure), so each rank's phases average its own GPU's."""
    assert _sm_active(_two_gpu_export(tmp_path)) == {"forward": 80.0, "backward": 80.0}


def test_the_exports_device_table_says_which_gpu_a_process_ran_on(tmp_path):
    """Where the export's device table says both processes' devices are GPU 0 (the same GPU, as
    two programs sharing one), GPU 0's samples are both processes'; the idle rank's phases hold 0."""
    path = _two_gpu_export(tmp_path, cuda_devices=[(1, 0, 0), (2, 1, 0)])
    assert _sm_active(path) == {"forward": 40.0, "backward": 40.0}
