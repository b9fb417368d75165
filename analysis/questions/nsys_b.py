"""nsys_profile (b): the kernel with the most summed GPU time in the forward pass, its calls in
ONE forward pass, and whether it still leads when forward and backward are counted together.

Needs: kernels attributed to measured ``forward`` ranges; ``backward`` ranges for the second part.
"""
from __future__ import annotations

from analysis.questions import nsys_text as text
from analysis.questions.nsys_inputs import NsysInputs, kernel_totals


def answer(inputs: NsysInputs) -> dict:
    """Answer (b); kernel names are demangled names."""
    forward = kernel_totals(inputs.measured_kernels(("forward",)), inputs.passes("forward"))
    if forward.empty:
        return {
            "top_forward_kernel": None,
            "top_forward_category": None,
            "calls_per_forward_pass": None,
            "top_forward_ms_per_pass": None,
            "top_forward_share": None,
            "top_forward_backward_kernel": None,
            "top_forward_backward_share": None,
            "same_kernel": None,
            "answer": inputs.no_kernels_reason("forward") + ", so it cannot say which kernel leads the forward pass.",
        }
    top = forward.iloc[0]
    sentence = (
        f"In the forward pass, {text.kernel_label(top['kernel'])} ({top['category']}) takes the most GPU time: "
        f"{text.ms(top['ms_per_pass'])} per pass, {text.pct(top['share'])} of forward kernel time, "
        f"over {text.plural(top['calls_per_pass'], 'call')} in one forward pass."
    )
    result = {
        "top_forward_kernel": top["kernel"],
        "top_forward_category": top["category"],
        "calls_per_forward_pass": float(top["calls_per_pass"]),
        "top_forward_ms_per_pass": float(top["ms_per_pass"]),
        "top_forward_share": float(top["share"]),
        "top_forward_backward_kernel": None,
        "top_forward_backward_share": None,
        "same_kernel": None,
    }
    if inputs.passes("backward") == 0:
        sentence += " The trace has no measured backward pass, so forward and backward cannot be compared."
        return result | {"answer": sentence}

    both = kernel_totals(inputs.measured_kernels(("forward", "backward")), inputs.passes("forward"))
    leader = both.iloc[0]
    same = leader["kernel"] == top["kernel"]
    if same:
        sentence += f" With the backward pass counted too, the same kernel leads with {text.pct(leader['share'])} of the time."
    else:
        rank = int(both.index[both["kernel"] == top["kernel"]][0]) + 1
        sentence += (
            f" With the backward pass counted too, {text.kernel_label(leader['kernel'])} ({leader['category']}) "
            f"leads instead with {text.pct(leader['share'])}; the forward leader ranks {_ordinal(rank)}."
        )
    return result | {
        "top_forward_backward_kernel": leader["kernel"],
        "top_forward_backward_share": float(leader["share"]),
        "same_kernel": bool(same),
        "answer": sentence,
    }


def _ordinal(rank: int) -> str:
    suffix = "th" if 10 <= rank % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
    return f"{rank}{suffix}"
