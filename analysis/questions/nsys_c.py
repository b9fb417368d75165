"""nsys_profile (c): the non-matmul kernels with non-trivial time in the forward pass, by kernel
and by category. "Non-trivial" is more than :data:`MIN_SHARE` of forward kernel time.

Needs: kernels attributed to measured ``forward`` ranges.
"""
from __future__ import annotations

from analysis.classify import GEMM
from analysis.questions import nsys_text as text
from analysis.questions.nsys_inputs import NsysInputs, category_ms, kernel_totals

MIN_SHARE = 0.01
NAMED_IN_ANSWER = 3


def answer(inputs: NsysInputs) -> dict:
    """Answer (c): non-GEMM kernels and categories above the threshold, with their shares."""
    kernels = inputs.measured_kernels(("forward",))
    passes = inputs.passes("forward")
    if kernels.empty:
        return {
            "min_share": MIN_SHARE,
            "non_gemm_share": None,
            "top_non_gemm_forward": [],
            "non_gemm_categories_forward": [],
            "answer": inputs.no_kernels_reason("forward") + ", so it cannot break the forward pass down.",
        }
    totals = kernel_totals(kernels, passes)
    non_gemm = totals[totals["category"] != GEMM]
    notable = non_gemm[non_gemm["share"] > MIN_SHARE]
    forward_ms = kernels["dur_ns"].sum() / max(passes, 1) / 1e6
    categories = category_ms(kernels, passes).drop(GEMM, errors="ignore")
    category_rows = [
        {"category": str(name), "ms_per_pass": float(ms), "share": float(ms / forward_ms)}
        for name, ms in categories.items()
    ]
    non_gemm_share = float(non_gemm["share"].sum())
    sentence = (
        f"Kernels other than matrix multiplications take {text.pct(non_gemm_share)} of forward kernel time "
        f"({text.ms(non_gemm['ms_per_pass'].sum())} per pass); "
    )
    if notable.empty:
        sentence += f"none of them alone exceeds {text.pct(MIN_SHARE)}."
    else:
        named = ", ".join(
            f"{text.kernel_label(row.kernel)} ({row.category}, {text.pct(row.share)})"
            for row in notable.head(NAMED_IN_ANSWER).itertuples()
        )
        sentence += f"{len(notable)} of them exceed {text.pct(MIN_SHARE)} each, led by {named}."
    if category_rows:
        listed = ", ".join(f"{row['category']} {text.pct(row['share'])}" for row in category_rows[:NAMED_IN_ANSWER])
        sentence += f" By category: {listed}."
    return {
        "min_share": MIN_SHARE,
        "non_gemm_share": non_gemm_share,
        "top_non_gemm_forward": notable[["kernel", "category", "calls_per_pass", "ms_per_pass", "share"]].to_dict("records"),
        "non_gemm_categories_forward": category_rows,
        "answer": sentence,
    }
