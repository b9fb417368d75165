"""nsys_profile (e): inside self-attention in the forward pass, the softmax's GPU time against
the two matmuls', and against the ratio of their FLOPs.

Softmax time is the summed time of the kernels launched inside the ``computing softmax`` ranges;
matmul time is the same for ``computing attention scores`` plus ``final matmul``; both over
measured forward passes, per pass. Needs: those NVTX sub-ranges inside measured ``forward``
ranges; the run's config for the FLOPs ratio.
"""
from __future__ import annotations

from analysis.flops import attention_flops_ratio
from analysis.phases import RangeNames
from analysis.questions import nsys_text as text
from analysis.questions.nsys_inputs import NsysInputs


def answer(inputs: NsysInputs, names: RangeNames = RangeNames()) -> dict:
    """Answer (e); ``flops_ratio`` is softmax FLOPs / matmul FLOPs, null without a config.

    Unanswerable (figures null) unless all three sub-ranges hold kernels in measured forward passes.
    """
    kernels = inputs.measured_kernels(("forward",))
    passes = max(inputs.passes("forward"), 1)
    flops_ratio = _flops_ratio(inputs.run.config)
    regions = (names.softmax, names.attention_scores, names.final_matmul)
    missing = [region for region in regions if not (kernels["region"] == region).any()]
    if missing:
        return {
            "softmax_ms_per_pass": None,
            "matmul_ms_per_pass": None,
            "softmax_kernels_per_pass": None,
            "matmul_kernels_per_pass": None,
            "runtime_ratio": None,
            "flops_ratio": flops_ratio,
            "answer": (
                "No kernels were launched inside "
                + ", ".join(f"`{region}`" for region in missing)
                + " ranges during measured forward passes, so this trace cannot split attention into softmax and matmuls."
            ),
        }
    softmax = kernels[kernels["region"] == names.softmax]
    matmuls = kernels[kernels["region"].isin((names.attention_scores, names.final_matmul))]
    softmax_ms = softmax["dur_ns"].sum() / passes / 1e6
    matmul_ms = matmuls["dur_ns"].sum() / passes / 1e6
    runtime_ratio = softmax_ms / matmul_ms
    sentence = (
        f"Inside attention, the softmax takes {text.ms(softmax_ms)} of GPU time per forward pass "
        f"({text.count(len(softmax) / passes)} kernels) against {text.ms(matmul_ms)} for the two matmuls "
        f"({text.count(len(matmuls) / passes)} kernels): {runtime_ratio:.2f}× their time."
    )
    if flops_ratio is None:
        sentence += " The trace carries no model shapes, so the FLOPs ratio is unknown."
    else:
        sentence += (
            f" By FLOPs the softmax is only {flops_ratio:.3f}× the matmuls, so per FLOP it is "
            f"{runtime_ratio / flops_ratio:.0f}× slower."
        )
    return {
        "softmax_ms_per_pass": softmax_ms,
        "matmul_ms_per_pass": matmul_ms,
        "softmax_kernels_per_pass": len(softmax) / passes,
        "matmul_kernels_per_pass": len(matmuls) / passes,
        "runtime_ratio": runtime_ratio,
        "flops_ratio": flops_ratio,
        "answer": sentence,
    }


def _flops_ratio(config: dict | None) -> float | None:
    """Softmax / matmul FLOPs from the config's shapes; None when the config lacks them."""
    try:
        return attention_flops_ratio(config) if config else None
    except ValueError:
        return None
