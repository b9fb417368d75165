"""The sentences of a trace summary: :func:`with_sentences` turns a stored summary (figures only,
:func:`analysis.trace.summary.summarize`, what the results cache keeps) into the shown one that
``analyze_trace``, the JSON output and the report read. Each per-trace question's record gets its
``answer`` (the question's ``write_trace``, with the warning for a forward pass of mixed shapes),
``efficiency`` its sentence (:func:`efficiency_sentence`) and ``memory_ledger`` mem-f's
(:func:`analysis.questions.mem_f.ledger_sentence`); the figures only a sentence reads
(``STORED_ONLY`` in :mod:`analysis.trace.summary_schema`) are left out of the shown record.

Nothing here changes a figure, so the wording can change without touching a stored summary or the
results cache's key.
"""
from __future__ import annotations

from analysis.core import text
from analysis.core.classify import CUDA_GRAPH
from analysis.core.flops import phase_flops
from analysis.questions.mem_f import ledger_sentence
from analysis.questions.registry import PER_TRACE
from analysis.questions.shared.story import LAUNCH_BOUND_IDLE_SHARE
from analysis.questions.shared.trace_text import mixed_shapes_note
from analysis.trace.efficiency import leading_precision, peak_precision
from analysis.trace.summary_schema import SHOWN, EfficiencyRecord, MemoryLedgerRecord, record_keys

# Kernels shorter on average than the CPU time PyTorch needs to launch one (a few µs of Python
# dispatch plus the CUDA launch call) leave a phase launch-bound when its GPU idles for more than
# LAUNCH_BOUND_IDLE_SHARE of its span: the CPU cannot issue work as fast as the GPU ends it.
LAUNCH_COST_US = 20.0


def with_sentences(summary: dict) -> dict:
    """The shown summary of a stored one (a new dict; the stored one is left as it is)."""
    questions = {
        question.summary_key: shown(summary["questions"][question.summary_key], question.record,
                                    question.write_trace(summary["questions"][question.summary_key], summary)
                                    + mixed_shapes_note(summary, "forward"))
        for question in PER_TRACE
    }
    return summary | {
        "efficiency": shown(summary["efficiency"], EfficiencyRecord, efficiency_sentence(summary)),
        "questions": questions,
        "memory_ledger": shown(summary["memory_ledger"], MemoryLedgerRecord,
                               ledger_sentence(summary["memory_ledger"], summary)),
    }


def shown(record: dict, record_type: type, answer: str) -> dict:
    """A stored record as shown: its keys of the shown form (in their stored order), then ``answer``."""
    keys = record_keys(record_type, SHOWN)
    return {key: value for key, value in record.items() if key in keys} | {"answer": answer}


def efficiency_sentence(summary: dict) -> str:
    """The ``efficiency`` section's sentence: achieved TFLOP/s and MFU per phase against the peak,
    why a figure is unknown, and the idlest phase with its verdict (launch-bound or not)."""
    record, phases = summary["efficiency"], summary["phases"]
    if not phases:
        return "The trace has no measured phase ranges, so there is no per-phase efficiency to report."
    parts = [f"{phase} {figures['achieved_tflop_per_s']:.1f} TFLOP/s"
             + (f" (MFU {text.pct(figures['mfu'])})" if figures["mfu"] is not None else "")
             for phase, figures in phases.items() if figures["achieved_tflop_per_s"] is not None]
    sentences = []
    if parts:
        sentences.append(_flops_source_text(record) + ", ".join(parts) + _peak_text(record) + ".")
    problem = _unknown_because(record, summary.get("config"), summary.get("gpu"))
    if problem:
        sentences.append(problem[0].upper() + problem[1:] + ".")
    idle = {p: f["idle_share"] for p, f in phases.items() if f["idle_share"] is not None}
    if idle:
        worst = max(idle, key=idle.get)
        mean_kernel_us = 1e3 * phases[worst]["kernel_ms_per_pass"] / max(phases[worst]["kernels_per_pass"], 1)
        launch_bound = idle[worst] > LAUNCH_BOUND_IDLE_SHARE and mean_kernel_us < LAUNCH_COST_US
        verdict = (
            "the phase is launch-bound"
            if launch_bound
            else "launches alone do not explain the gaps" if idle[worst] > LAUNCH_BOUND_IDLE_SHARE else "the GPU is kept busy"
        )
        graphs = (phases[worst].get("by_category_ms_per_pass") or {}).get(CUDA_GRAPH)
        sentences.append(
            f"The GPU is idle for {text.pct(idle[worst])} of the {worst} phase's GPU span "
            f"with a mean kernel of {mean_kernel_us:.1f} µs"
            f"{' (each CUDA graph traced whole counting as one kernel)' if graphs else ''}: {verdict}."
        )
    return " ".join(sentences)


def _flops_source_text(record: dict) -> str:
    if record["flops_source"] == "matmul op shapes":
        return "Matmul FLOPs (from the shapes of the trace's aten::mm/addmm/bmm op ranges) over GPU time: "
    return "Model FLOPs over GPU time: "


def _peak_text(record: dict) -> str:
    if record["peak_tflop_per_s"] is None:
        return ""
    precision = leading_precision(record["gemm_precision_mix"])
    note = (f" (the precision of {text.pct(record['gemm_precision_mix'][precision])} of its GEMM kernels' time)"
            if precision else "")
    return (f" against the {record['peak_gpu']}'s {record['peak_tflop_per_s']:.1f} TFLOP/s "
            f"{record['precision']} peak{note}")


def _unknown_because(record: dict, config: dict | None, gpu_name: str | None) -> str | None:
    """Why the FLOPs or the peak (and with it the MFU) are unknown, from what they are made of
    (:func:`analysis.trace.efficiency.gpu_usage`); None when both are known."""
    if record["flops_source"] is None:
        if not config:
            return "the trace carries no model config, so model FLOPs are unknown"
        try:
            phase_flops(config)
        except ValueError as err:
            return f"model FLOPs are unknown ({err})"
        return None
    if record["peak_tflop_per_s"] is not None:
        return None
    if not gpu_name:
        return "the GPU is not named in the trace, so its peak and the MFU are unknown"
    try:
        precision = peak_precision(config or {}, leading_precision(record["gemm_precision_mix"]))
    except ValueError as err:
        return f"the matmul precision is unknown ({err})"
    return f"no {precision} peak is known for {gpu_name}, so MFU is unknown"
