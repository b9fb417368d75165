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

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

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


def _gpu(gpu: str, pattern: str, source: str, **dense_tflop_per_s: float) -> GpuPeaks:
    return GpuPeaks(gpu, re.compile(pattern), MappingProxyType(dense_tflop_per_s), source)


_HOPPER_SPARSE = "tensor-core figures are with sparsity (*), halved for dense"

# Most specific first: "h200 nvl" before "h200", "a100 ... pcie" before "a100".
GPU_PEAKS = (
    _gpu("NVIDIA H200 NVL", r"\bh200 nvl\b",
         f"NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column; {_HOPPER_SPARSE}",
         fp32=60.0, tf32=417.5, bf16=835.5, fp16=835.5),
    _gpu("NVIDIA H200 SXM", r"\bh200\b",
         f"NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column; {_HOPPER_SPARSE}",
         fp32=67.0, tf32=494.5, bf16=989.5, fp16=989.5),
    _gpu("NVIDIA H100 NVL", r"\bh100 nvl\b",
         f"NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column; {_HOPPER_SPARSE}",
         fp32=60.0, tf32=417.5, bf16=835.5, fp16=835.5),
    _gpu("NVIDIA H100 PCIe", r"\bh100\b.*\bpcie\b",
         f"NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column; {_HOPPER_SPARSE}",
         fp32=51.0, tf32=378.0, bf16=756.5, fp16=756.5),
    _gpu("NVIDIA H100 SXM5", r"\bh100\b.*\b(sxm5?|hbm3)\b",
         f"NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column; {_HOPPER_SPARSE}",
         fp32=67.0, tf32=494.5, bf16=989.5, fp16=989.5),
    _gpu("NVIDIA A100 PCIe", r"\ba100\b.*\bpcie\b",
         "NVIDIA A100 Tensor Core GPU datasheet, PCIe column (dense figures)",
         fp32=19.5, tf32=156.0, bf16=312.0, fp16=312.0),
    _gpu("NVIDIA A100 SXM4", r"\ba100\b.*\bsxm4?\b",
         "NVIDIA A100 Tensor Core GPU datasheet, SXM column (dense figures)",
         fp32=19.5, tf32=156.0, bf16=312.0, fp16=312.0),
    _gpu("NVIDIA A10", r"\ba10\b",
         "NVIDIA A10 Tensor Core GPU datasheet (dense figures)",
         fp32=31.2, tf32=62.5, bf16=125.0, fp16=125.0),
    _gpu("NVIDIA L40S", r"\bl40s\b",
         "NVIDIA L40S GPU datasheet (dense figures)",
         fp32=91.6, tf32=183.0, bf16=362.05, fp16=362.05),
    _gpu("NVIDIA L4", r"\bl4\b",
         "NVIDIA L4 Tensor Core GPU datasheet; tensor-core figures are with sparsity (*), "
         "halved for dense",
         fp32=30.3, tf32=60.0, bf16=121.0, fp16=121.0),
    _gpu("NVIDIA V100S PCIe", r"\bv100s\b",
         "NVIDIA V100 Tensor Core GPU datasheet, V100S PCIe column (no TF32/BF16 on Volta)",
         fp32=16.4, fp16=130.0),
    _gpu("NVIDIA V100 PCIe", r"\bv100\b.*\bpcie\b",
         "NVIDIA V100 Tensor Core GPU datasheet, V100 PCIe column (no TF32/BF16 on Volta)",
         fp32=14.0, fp16=112.0),
    _gpu("NVIDIA V100 SXM2", r"\bv100\b.*\bsxm2?\b",
         "NVIDIA V100 Tensor Core GPU datasheet, V100 SXM2 column (no TF32/BF16 on Volta)",
         fp32=15.7, fp16=125.0),
    _gpu("NVIDIA T4", r"\bt4\b",
         "NVIDIA T4 Tensor Core GPU datasheet: single precision, mixed precision FP16/FP32 "
         "(no TF32/BF16 on Turing)",
         fp32=8.1, fp16=65.0),
    _gpu("NVIDIA GeForce RTX 4090", r"\brtx 4090$",
         "NVIDIA Ada GPU architecture whitepaper, GeForce RTX 4090 column; FP16/BF16 with FP32 "
         "accumulate, dense",
         fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2),
    _gpu("NVIDIA GeForce RTX 3090", r"\brtx 3090$",
         "NVIDIA Ampere GA102 GPU architecture whitepaper, GeForce RTX 3090 column; FP16/BF16 "
         "with FP32 accumulate, dense",
         fp32=35.6, tf32=35.6, bf16=71.0, fp16=71.0),
    _gpu("NVIDIA GeForce RTX 3080", r"\brtx 3080$",
         "NVIDIA Ampere GA102 GPU architecture whitepaper, GeForce RTX 3080 column; FP16/BF16 "
         "with FP32 accumulate, dense",
         fp32=29.8, tf32=29.8, bf16=59.5, fp16=59.5),
    _gpu("NVIDIA GeForce RTX 2070 SUPER", r"\brtx 2070 super$",
         "derived from the GeForce RTX 2070 SUPER specifications (2560 CUDA cores, 320 tensor "
         "cores, 1770 MHz boost) and the NVIDIA Turing GPU architecture whitepaper's per-core "
         "rates (2 FLOP/clock per CUDA core; 64 FP16 FMA/clock per tensor core, half rate with "
         "FP32 accumulate on GeForce); no TF32/BF16 on Turing",
         fp32=9.06, fp16=36.25),
)


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
