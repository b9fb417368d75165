"""Peak FLOP/s lookup by the GPU name nsys writes, and the precision of a run."""
from __future__ import annotations

import sqlite3

import pytest

from analysis.core.gpus import GPU_PEAKS, PRECISIONS, gpu_peaks, peak_flops, precision_for_run


def _gpu_names(path) -> list[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return [name for (name,) in db.execute("SELECT name FROM TARGET_INFO_GPU")]


@pytest.mark.parametrize("trace, table_gpu", [
    ("small_ctx128_train_fp32.sqlite", "NVIDIA H200 SXM"),  # "NVIDIA H200"
    ("attention_bench.sqlite", "NVIDIA H200 SXM"),
])
def test_fixture_gpu_names(fixture_trace, trace, table_gpu):
    names = _gpu_names(fixture_trace(trace))
    assert names == ["NVIDIA H200"]
    assert gpu_peaks(names[0]).gpu == table_gpu


@pytest.mark.parametrize("trace, nsys_names, table_gpus", [
    ("mock.sqlite", ["NVIDIA GeForce RTX 3080"], ["NVIDIA GeForce RTX 3080"]),
    ("dlprof_pytorch_cnn_2022.sqlite", ["NVIDIA GeForce RTX 2070 SUPER"],
     ["NVIDIA GeForce RTX 2070 SUPER"]),
    # nsys ~2021 writes the name without the vendor prefix.
    ("extrap_ex-gpu_2021.sqlite", ["A100-PCIE-40GB"] * 4, ["NVIDIA A100 PCIe"] * 4),
    # A laptop GPU with vendor-set clocks and two display adapters: unknown.
    ("extrap_profile1_2022win.sqlite",
     ["GeForce GTX 1060 with Max-Q Design", "Intel(R) HD Graphics 630",
      "Microsoft Basic Render Driver"], [None, None, None]),
])
def test_external_gpu_names(external_trace, trace, nsys_names, table_gpus):
    names = _gpu_names(external_trace(trace))
    assert names == nsys_names
    assert [row.gpu if row else None for row in map(gpu_peaks, names)] == table_gpus


@pytest.mark.parametrize("nsys_name, table_gpu", [
    ("NVIDIA H200 NVL", "NVIDIA H200 NVL"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 PCIe"),
    ("NVIDIA A10", "NVIDIA A10"),
    ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2"),
    ("Tesla V100-PCIE-32GB", "NVIDIA V100 PCIe"),
    ("Tesla V100S-PCIE-32GB", "NVIDIA V100S PCIe"),
    ("Tesla T4", "NVIDIA T4"),
    ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
    # Look-alikes with other peaks must not borrow a neighbour's row.
    ("NVIDIA A10G", None),
    ("NVIDIA A100X", None),
    ("NVIDIA L40", None),
    ("NVIDIA GH200 480GB", None),
    ("NVIDIA GeForce RTX 3080 Ti", None),
    ("NVIDIA GeForce RTX 4090 D", None),
    ("", None),
    (None, None),
])
def test_name_matching_most_specific_first(nsys_name, table_gpu):
    row = gpu_peaks(nsys_name)
    assert (row.gpu if row else None) == table_gpu


def test_peak_values_and_sources():
    h200_bf16 = peak_flops("NVIDIA H200", "bf16")
    assert h200_bf16.gpu == "NVIDIA H200 SXM"
    assert h200_bf16.flops_per_s == 989.5e12  # datasheet 1,979 TFLOPS with sparsity, halved
    assert "H200" in h200_bf16.source and "datasheet" in h200_bf16.source
    assert peak_flops("NVIDIA H200", "fp32").flops_per_s == 67e12
    assert peak_flops("NVIDIA H100 PCIe", "tf32").flops_per_s == 378e12
    assert peak_flops("A100-PCIE-40GB", "tf32").flops_per_s == 156e12
    assert peak_flops("NVIDIA GeForce RTX 3080", "fp16").flops_per_s == 59.5e12
    assert peak_flops("NVIDIA GeForce RTX 2070 SUPER", "fp16").flops_per_s == 36.25e12


def test_unknown_gpu_or_missing_precision_is_none():
    assert peak_flops(None, "bf16") is None
    assert peak_flops("NVIDIA RTX A5000", "fp32") is None
    assert peak_flops("Tesla V100-SXM2-16GB", "bf16") is None  # Volta has no BF16
    assert peak_flops("Tesla T4", "tf32") is None
    with pytest.raises(ValueError, match="unknown precision"):
        peak_flops("NVIDIA H200", "fp8")


@pytest.mark.parametrize("row", GPU_PEAKS, ids=[row.gpu for row in GPU_PEAKS])
def test_every_row_is_consistent(row):
    rates = row.dense_tflop_per_s
    assert row.source and set(rates) <= set(PRECISIONS) and "fp32" in rates
    # Tensor-core rates are at least the CUDA-core FP32 rate; 16-bit at least TF32.
    assert all(rates[p] >= rates["fp32"] for p in rates)
    if "tf32" in rates:
        assert rates["bf16"] >= rates["tf32"] and rates["fp16"] >= rates["tf32"]
    assert gpu_peaks(row.gpu) is row  # the product name finds its own row


@pytest.mark.parametrize("dtype, tf32, precision", [
    ("fp32", False, "fp32"),
    ("fp32", True, "tf32"),
    ("float32", False, "fp32"),
    ("bf16", False, "bf16"),
    ("bf16", True, "bf16"),
    ("torch.bfloat16", False, "bf16"),
    ("fp16", False, "fp16"),
    ("float16", True, "fp16"),
])
def test_precision_for_run(dtype, tf32, precision):
    assert precision_for_run(dtype, tf32=tf32) == precision


def test_precision_for_unknown_dtype():
    with pytest.raises(ValueError, match="unknown dtype"):
        precision_for_run("int8")
