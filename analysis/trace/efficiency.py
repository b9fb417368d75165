"""How well each phase uses the GPU: achieved model TFLOP/s and MFU, and the idle gaps inside it.

Achieved FLOP/s = the phase's model FLOPs (:func:`analysis.core.flops.phase_flops`, from the run's
shapes) / its GPU projection (first op start to last op end, so launch latency before the first
kernel is not counted). MFU = achieved / the GPU's dense peak (:mod:`analysis.core.gpus`) at the
precision the GEMM kernels run in (:func:`analysis.core.classify.gemm_precision_mix`), or at the run
config's dtype and TF32 flag when the kernel names do not tell. Idle share = idle time / GPU
projection: the fraction of the phase's GPU span in which no operation ran; with short kernels,
the signature of a launch-bound phase.
"""
from __future__ import annotations

from analysis.core import text
from analysis.core.classify import gemm_precision_mix
from analysis.core.flops import phase_flops
from analysis.core.gpus import peak_flops, precision_for_run
from analysis.trace.nsys_inputs import NsysInputs

# A phase is launch-bound when the GPU idles for more than this share of its span while its
# kernels are, on average, shorter than the CPU time PyTorch needs to launch one (a few µs of
# Python dispatch plus the CUDA launch call): the CPU cannot issue work as fast as the GPU ends it.
LAUNCH_BOUND_IDLE_SHARE = 0.25
LAUNCH_COST_US = 20.0


def per_trace(inputs: NsysInputs) -> dict:
    """:func:`answer` for one trace, from ``inputs.phases`` and the precision mix of its measured
    GEMM kernels."""
    return answer(inputs.phases, inputs.run.config, inputs.gpu_name, gemm_precision_mix(inputs.measured_kernels()),
                  inputs.op_flops)


def answer(phases: dict[str, dict], config: dict | None, gpu_name: str | None,
           gemm_precisions: dict[str, float] | None = None, op_flops: dict | None = None) -> dict:
    """Per-phase ``model_flops_per_pass``, ``achieved_tflop_per_s``, ``mfu`` and ``idle_share``,
    the peak used, and a sentence; FLOP figures are null when the trace has no usable config.
    ``gemm_precisions`` is the GEMM time share per precision of the measured kernels
    (:func:`analysis.core.classify.gemm_precision_mix`): the peak is the one of the precision that
    holds most GEMM time, so an fp32 run whose GEMMs are TF32 is not held to the FP32 peak.
    ``op_flops`` (matmul FLOPs per pass from the trace's op shapes) stand in for a missing config."""
    flops, flops_problem = _phase_flops(config)
    flops_source = "run config" if flops else None
    if not flops and op_flops:
        flops, flops_problem, flops_source = op_flops, None, "matmul op shapes"
    kernel_precision = max((p for p in gemm_precisions or {} if p != "unknown"),
                           key=lambda p: gemm_precisions[p], default=None)
    peak, peak_problem = _peak(config or {}, gpu_name, kernel_precision) if flops else (None, None)
    precision_note = (f" (the precision of {text.pct(gemm_precisions[kernel_precision])} of its "
                      "GEMM kernels' time)" if kernel_precision else "")
    per_phase = {}
    for phase, figures in phases.items():
        span_ms = figures["gpu_span_ms_per_pass"]
        phase_flops_per_pass = flops.get(phase)
        achieved = phase_flops_per_pass / (span_ms / 1e3) if phase_flops_per_pass and span_ms > 0 else None
        per_phase[phase] = {
            "model_flops_per_pass": phase_flops_per_pass,
            "achieved_tflop_per_s": achieved / 1e12 if achieved is not None else None,
            "mfu": achieved / peak.flops_per_s if achieved is not None and peak else None,
            "idle_share": figures["idle_ms_per_pass"] / span_ms if span_ms > 0 else None,
        }
    return {
        "precision": peak.precision if peak else None,
        "peak_gpu": peak.gpu if peak else None,
        "peak_tflop_per_s": peak.flops_per_s / 1e12 if peak else None,
        "peak_source": peak.source if peak else None,
        "precision_source": "GEMM kernels" if kernel_precision else "run config",
        "flops_source": flops_source,
        "gemm_precision_mix": dict(gemm_precisions or {}),
        "phases": per_phase,
        "answer": _sentence(per_phase, phases, peak, flops_problem or peak_problem, precision_note, flops_source),
    }


def _phase_flops(config: dict | None) -> tuple[dict, str | None]:
    if not config:
        return {}, "the trace carries no model config, so model FLOPs are unknown"
    try:
        return phase_flops(config), None
    except ValueError as err:
        return {}, f"model FLOPs are unknown ({err})"


def _peak(config: dict, gpu_name: str | None, kernel_precision: str | None):
    if not gpu_name:
        return None, "the GPU is not named in the trace, so its peak and the MFU are unknown"
    try:
        precision = kernel_precision or precision_for_run(
            str(config.get("dtype", "")), tf32=bool(config.get("allow_tf32", False)))
    except ValueError as err:
        return None, f"the matmul precision is unknown ({err})"
    peak = peak_flops(gpu_name, precision)
    if peak is None:
        return None, f"no {precision} peak is known for {gpu_name}, so MFU is unknown"
    return peak, None


def _sentence(per_phase: dict, phases: dict, peak, problem: str | None, precision_note: str,
              flops_source: str | None = None) -> str:
    if not per_phase:
        return "The trace has no measured phase ranges, so there is no per-phase efficiency to report."
    parts = []
    for phase, figures in per_phase.items():
        if figures["achieved_tflop_per_s"] is None:
            continue
        part = f"{phase} {figures['achieved_tflop_per_s']:.1f} TFLOP/s"
        if figures["mfu"] is not None:
            part += f" (MFU {text.pct(figures['mfu'])})"
        parts.append(part)
    sentences = []
    if parts:
        against = (f" against the {peak.gpu}'s {peak.flops_per_s / 1e12:.1f} TFLOP/s "
                   f"{peak.precision} peak{precision_note}" if peak else "")
        what = ("Matmul FLOPs (from the shapes of the trace's aten::mm/addmm/bmm op ranges) over GPU time: "
                if flops_source == "matmul op shapes" else "Model FLOPs over GPU time: ")
        sentences.append(what + ", ".join(parts) + against + ".")
    if problem:
        sentences.append(problem[0].upper() + problem[1:] + ".")
    idle = {p: f["idle_share"] for p, f in per_phase.items() if f["idle_share"] is not None}
    if idle:
        worst = max(idle, key=idle.get)
        mean_kernel_us = 1e3 * phases[worst]["kernel_ms_per_pass"] / max(phases[worst]["kernels_per_pass"], 1)
        launch_bound = idle[worst] > LAUNCH_BOUND_IDLE_SHARE and mean_kernel_us < LAUNCH_COST_US
        verdict = (
            "the phase is launch-bound"
            if launch_bound
            else "launches alone do not explain the gaps" if idle[worst] > LAUNCH_BOUND_IDLE_SHARE else "the GPU is kept busy"
        )
        sentences.append(
            f"The GPU is idle for {text.pct(idle[worst])} of the {worst} phase's GPU span "
            f"with a mean kernel of {mean_kernel_us:.1f} µs: {verdict}."
        )
    return " ".join(sentences)
