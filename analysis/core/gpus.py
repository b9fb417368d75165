"""Peak dense FLOP/s per GPU and precision, with the vendor document each number comes from.

GPUs are looked up by the name nsys writes in `TARGET_INFO_GPU.name` ("NVIDIA H200",
"NVIDIA H100 80GB HBM3", "A100-PCIE-40GB", "NVIDIA GeForce RTX 3080"). The name is lower-cased,
`-`/`_` become spaces, and the entries' patterns are tried most specific first. A GPU no pattern
matches is unknown: `peak_flops` returns None and the report says MFU is unknown.

Precisions: `fp32` is plain FP32 on CUDA cores; `tf32`, `bf16`, `fp16` are dense tensor-core
rates (no 2:4 sparsity). Datasheets that print only sparsity figures (marked `*`, "1/2 lower
without sparsity") are halved. GeForce cards run fp16/bf16 tensor math with FP32 accumulation
(what PyTorch uses) at half their FP16-accumulate rate; their whitepapers list both, and the
table keeps the FP32-accumulate one.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


@dataclass(frozen=True)
class PeakFlops:
    """The peak of one GPU at one precision."""

    gpu: str
    precision: str
    flops_per_s: float
    source: str


@dataclass(frozen=True)
class GpuPeaks:
    """One row of the peak table: a product, the names it matches, dense TFLOP/s per precision."""

    gpu: str
    name_pattern: re.Pattern
    dense_tflop_per_s: Mapping[str, float]
    source: str


# The table, one row per product, most specific pattern first ("h200 nvl" before "h200", "a100 ...
# pcie" before "a100"): product, name pattern, dense TFLOP/s per precision (empty where the product
# has no such tensor-core mode), and the vendor document.
PEAKS_TABLE = Path(__file__).with_name("gpu_peaks.csv")


def _read_peaks(path: Path) -> tuple[GpuPeaks, ...]:
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return tuple(GpuPeaks(row["gpu"], re.compile(row["name_pattern"]), MappingProxyType(
        {p: float(row[f"{p}_tflop_per_s"]) for p in PRECISIONS if row[f"{p}_tflop_per_s"]}), row["source"])
        for row in rows)


GPU_PEAKS = _read_peaks(PEAKS_TABLE)


def _normalized(gpu_name: str) -> str:
    return " ".join(re.sub(r"[-_]", " ", gpu_name.lower()).split())


def gpu_peaks(gpu_name: str | None) -> GpuPeaks | None:
    """Return the table row for a GPU name as nsys writes it, or None when unknown."""
    if not gpu_name:
        return None
    name = _normalized(gpu_name)
    return next((row for row in GPU_PEAKS if row.name_pattern.search(name)), None)


def peak_flops(gpu_name: str | None, precision: str) -> PeakFlops | None:
    """Peak dense FLOP/s of a GPU at a precision; None for unknown GPUs or unsupported precisions.

    `precision` is one of `PRECISIONS`; anything else raises ValueError.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {PRECISIONS}")
    row = gpu_peaks(gpu_name)
    if row is None or precision not in row.dense_tflop_per_s:
        return None
    return PeakFlops(row.gpu, precision, row.dense_tflop_per_s[precision] * 1e12, row.source)


_DTYPE_ALIASES = {
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
}


def precision_for_run(dtype: str, tf32: bool = False) -> str:
    """The precision whose peak applies to a run's matmuls.

    An fp32 run uses CUDA cores ("fp32") unless TF32 matmuls were allowed ("tf32"); bf16/fp16
    autocast runs their matmuls on tensor cores at that precision. Accepts "torch.bfloat16" too.
    """
    key = dtype.lower().removeprefix("torch.")
    if key not in _DTYPE_ALIASES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(_DTYPE_ALIASES)}")
    precision = _DTYPE_ALIASES[key]
    return "tf32" if precision == "fp32" and tf32 else precision
