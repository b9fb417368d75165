"""nsys_profile (b): the kernel with the most summed GPU time in the forward pass, its calls in
ONE forward pass, and whether it still leads when forward and backward are counted together.

Needs: kernels attributed to measured ``forward`` ranges; ``backward`` ranges for the second part.
"""
from __future__ import annotations

from typing import TypedDict

from analysis import text
from analysis.questions import nsys_grid as grid
from analysis.questions.nsys_inputs import NsysInputs, kernel_totals
from analysis.questions.question import Evidence, Question
from analysis.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.runs import sorted_summaries


class Record(TypedDict):
    """The per-trace record of (b), in the summary's ``questions["b"]``."""

    top_forward_kernel: str | None
    top_forward_category: str | None
    calls_per_forward_pass: float | None
    top_forward_ms_per_pass: float | None
    top_forward_share: float | None
    top_forward_backward_kernel: str | None
    top_forward_backward_share: float | None
    same_kernel: bool | None
    answer: str


def per_trace(inputs: NsysInputs) -> dict:
    """Answer (b) for one trace; kernel names are demangled names."""
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


KEYS = ("top_forward_kernel", "top_forward_category", "calls_per_forward_pass", "top_forward_ms_per_pass",
        "top_forward_share", "top_forward_backward_kernel", "top_forward_backward_share", "same_kernel")


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """One row per trace with forward kernels: its leading kernel, alone and with the backward pass."""
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "b", KEYS, "top_forward_kernel")
    if table.empty:
        return Unanswered("nsys-b", "a trace with kernels in measured `forward` ranges")
    for column in ("top_forward_kernel", "top_forward_backward_kernel"):
        if column in table:
            table[column] = table[column].map(grid.kernel_cell, na_action="ignore")
    return grid.finish("nsys-b", {"The forward pass's leading kernel": table}, summaries)


def _grid_text(record: ResultsAnswer) -> str:
    table = grid.first_table(record)
    categories = table["top_forward_category"].value_counts()
    text = (f"In {categories.iloc[0]} of {len(table)} traces the forward pass's leading kernel is a "
            f"{categories.index[0]} kernel; the leading kernel takes {grid.pct_span(table['top_forward_share'])} of "
            f"forward kernel time over {grid.span(table['calls_per_forward_pass'], '{:,.0f}')} calls in one forward pass.")
    if "same_kernel" in table and table["same_kernel"].notna().any():
        both = table.dropna(subset=["same_kernel"])
        text += f" With the backward pass counted too, the same kernel still leads in {int(both['same_kernel'].sum())} " \
                f"of {len(both)} traces."
    return text


QUESTION = Question(
    id="nsys-b", section="nsys_profile", title="The leading kernel",
    text="Which kernel takes the most GPU time in the forward pass, how many times does it run in one pass, "
         "and does it still lead with the backward pass?",
    needs="nsys traces of the runner (analyze-nsys TRACE ...)",
    per_trace=per_trace, record=Record, summary_key="b", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["forward", "top_forward_share", 100], ["forward + backward", "top_forward_backward_share", 100]],
        "xlabel": "leading kernel's share of kernel time (%)", "title": "How much the leading kernel takes"}),
)
