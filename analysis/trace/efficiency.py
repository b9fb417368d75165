"""How well each phase uses the GPU: achieved model TFLOP/s and MFU, and the idle gaps inside it.

Achieved FLOP/s = the phase's model FLOPs (:func:`analysis.core.flops.phase_flops`, from the run's
shapes) / its GPU projection (first op start to last op end, so launch latency before the first
kernel is not counted). MFU = achieved / the GPU's dense peak (:mod:`analysis.core.gpus`) at the
precision the GEMM kernels run in (:func:`analysis.core.classify.gemm_precision_mix`), or at the run
config's dtype and TF32 flag when the kernel names do not tell. Idle share = idle time / GPU
projection: the fraction of the phase's GPU span in which no operation ran; with short kernels,
the signature of a launch-bound phase.

Two sections of the summary come from here: ``efficiency`` (:func:`efficiency_record`: the peak
and where the FLOPs come from) and the usage figures of each phase that ``phases`` holds
(:func:`phase_usage`). The sentence about them is written above, from these figures
(:mod:`analysis.questions.sentences`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from analysis.core.flops import phase_flops
from analysis.core.gpus import PeakFlops, peak_flops, precision_for_run

if TYPE_CHECKING:
    from analysis.trace.nsys_inputs import NsysInputs


@dataclass(frozen=True)
class GpuUsage:
    """What the achieved FLOP/s and MFU of a trace's phases are measured with."""

    flops: dict  # phase -> model FLOPs per pass (empty when unknown)
    flops_source: str | None  # run config, matmul op shapes, or None
    kernel_precision: str | None  # the precision holding most GEMM time, when the kernel names tell
    peak: PeakFlops | None  # the GPU's dense peak at that precision (None without FLOPs)


def gpu_usage(config: dict | None, gpu_name: str | None, gemm_precisions: dict[str, float],
              op_flops: dict | None = None) -> GpuUsage:
    """The FLOPs and peak of a trace: FLOPs from the run config's shapes, else ``op_flops``
    (matmul FLOPs per pass from the trace's op shapes); the peak of the precision that holds most
    GEMM time in ``gemm_precisions`` (:func:`analysis.core.classify.gemm_precision_mix`), so an
    fp32 run whose GEMMs are TF32 is not held to the FP32 peak, else of the config's dtype and TF32
    flag. A part that cannot be known is empty or None (:func:`model_flops`, :func:`run_peak`)."""
    flops, flops_source = model_flops(config), "run config"
    if not flops:
        flops, flops_source = (op_flops, "matmul op shapes") if op_flops else ({}, None)
    kernel_precision = leading_precision(gemm_precisions)
    peak = run_peak(config or {}, gpu_name, kernel_precision) if flops else None
    return GpuUsage(flops, flops_source, kernel_precision, peak)


def model_flops(config: dict | None) -> dict:
    """Model FLOPs per pass per phase from the run config's shapes; empty when the config is
    missing or its shapes do not give them (:func:`analysis.core.flops.phase_flops` says why)."""
    if not config:
        return {}
    try:
        return phase_flops(config)
    except ValueError:
        return {}


def leading_precision(gemm_precisions: dict[str, float]) -> str | None:
    """The precision holding most GEMM time in a precision mix, when the kernel names told it."""
    return max((p for p in gemm_precisions if p != "unknown"), key=lambda p: gemm_precisions[p], default=None)


def peak_precision(config: dict, kernel_precision: str | None) -> str:
    """The precision a run's peak is taken at: ``kernel_precision``, else the config's dtype and
    TF32 flag; ValueError when the config does not tell it either."""
    return kernel_precision or precision_for_run(str(config.get("dtype", "")), tf32=bool(config.get("allow_tf32", False)))


def run_peak(config: dict, gpu_name: str | None, kernel_precision: str | None) -> PeakFlops | None:
    """The GPU's dense peak at :func:`peak_precision`; None when the GPU, the precision or its
    peak is unknown."""
    if not gpu_name:
        return None
    try:
        precision = peak_precision(config, kernel_precision)
    except ValueError:
        return None
    return peak_flops(gpu_name, precision)


def trace_usage(inputs: NsysInputs) -> GpuUsage:
    """:func:`gpu_usage` of one trace, from the precision mix of its measured GEMM kernels."""
    return gpu_usage(inputs.run.config, inputs.gpu_name, inputs.gemm_precisions(), inputs.op_flops)


def efficiency_record(inputs: NsysInputs) -> dict:
    """The summary's ``efficiency`` section: the peak used and where the FLOPs and the precision
    come from (nulls when unknown)."""
    usage = trace_usage(inputs)
    peak = usage.peak
    return {
        "precision": peak.precision if peak else None,
        "peak_gpu": peak.gpu if peak else None,
        "peak_tflop_per_s": peak.flops_per_s / 1e12 if peak else None,
        "peak_source": peak.source if peak else None,
        "precision_source": "GEMM kernels" if usage.kernel_precision else "run config",
        "flops_source": usage.flops_source,
        "gemm_precision_mix": dict(inputs.gemm_precisions()),
    }


def phase_usage(figures: dict, phase: str, usage: GpuUsage) -> dict:
    """One phase's ``model_flops_per_pass``, ``achieved_tflop_per_s``, ``mfu`` and ``idle_share``
    from its figures in ``phases`` (GPU span and idle time per pass); FLOP figures are null when
    the FLOPs are unknown."""
    span_ms = figures["gpu_span_ms_per_pass"]
    flops_per_pass = usage.flops.get(phase)
    achieved = flops_per_pass / (span_ms / 1e3) if flops_per_pass and span_ms > 0 else None
    return {
        "model_flops_per_pass": flops_per_pass,
        "achieved_tflop_per_s": achieved / 1e12 if achieved is not None else None,
        "mfu": achieved / usage.peak.flops_per_s if achieved is not None and usage.peak else None,
        "idle_share": figures["idle_ms_per_pass"] / span_ms if span_ms > 0 else None,
    }
