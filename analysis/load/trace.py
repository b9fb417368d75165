"""The loaded trace: one nsys export as tidy tables (columns in docs/architecture.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass
class Trace:
    """One nsys export as tidy tables; units are in the column names."""

    path: Path
    nsys_version: str | None
    schema_version: str | None
    kernels: pd.DataFrame
    memops: pd.DataFrame
    ranges: pd.DataFrame
    marks: pd.DataFrame
    gpus: pd.DataFrame
    capture_start_ns: int
    capture_end_ns: int
    cuda_graph_launches: int = 0
    # PyTorch's matmul op ranges with their shapes (load.nvtx.read_gemm_ops), empty without them
    gemm_ops: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["start_ns", "end_ns", "pid", "tid", "name"]))
    notes: list[str] = field(default_factory=list)
    # 24-bit pids that processes on different hosts share: their ``pid`` is the whole process key
    # (:func:`analysis.load.tables.pid_column`); readers of the trace's other tables use the same.
    shared_pids: tuple[int, ...] = ()
    # The optional tables, read with the others (the export is opened once): tensor-level memory
    # events (load.memory_events) and GPU metrics samples (load.gpu_metrics), None when the export
    # lacks them; NCCL calls with their message sizes (load.nccl_payloads), empty without them.
    memory_events: pd.DataFrame | None = None
    gpu_metrics: pd.DataFrame | None = None
    # Which sampled GPU each process's CUDA device is (load.gpu_metrics.read_cuda_devices): pid,
    # device_id, gpu; empty when the export does not say.
    cuda_devices: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["pid", "device_id", "gpu"]))
    nccl_calls: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["pid", "tid", "start_ns", "call", "bytes"]))
    # The rank and world size a launcher gave the one process nsys ran (load.launcher), ``{}`` when
    # the environment nsys started in holds none (nsys started the launcher, or there was none).
    launcher_rank: dict = field(default_factory=dict)
    # The program's cudaProfilerStart/Stop calls, waits for the GPU and CUDA event records
    # (load.tables.host_calls_of, read with the launch calls): pid, start_ns, call ("start",
    # "stop", "sync" or "record").
    host_calls: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["pid", "start_ns", "call"]))
    # Notes of the optional tables' readers (rows left out), by field name, until optional_table takes them.
    table_notes: dict[str, list[str]] = field(default_factory=dict)

    def optional_table(self, name: str) -> pd.DataFrame | None:
        """The optional table ``name`` (``memory_events`` or ``gpu_metrics``); its reader's notes
        join :attr:`notes` now, where the summary reaches that table."""
        self.notes.extend(self.table_notes.pop(name, []))
        return getattr(self, name)

    @property
    def gpu_name(self) -> str | None:
        """The GPU's name when the trace used one kind of GPU, else None."""
        names = self.gpus["name"].dropna().unique() if len(self.gpus) else []
        return str(names[0]) if len(names) == 1 else None
