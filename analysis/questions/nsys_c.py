"""nsys_profile (c): the non-matmul kernels with non-trivial time in the forward pass, by kernel
and by category. "Non-trivial" is more than :data:`MIN_SHARE` of forward kernel time.

Needs: kernels attributed to measured ``forward`` ranges.
"""
from __future__ import annotations

from typing import TypedDict

import pandas as pd

from analysis.classify import GEMM
from analysis import text
from analysis.questions import nsys_grid as grid
from analysis.questions.nsys_inputs import NsysInputs, category_ms, kernel_totals
from analysis.questions.question import Evidence, Question
from analysis.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.runs import run_label, sorted_summaries

MIN_SHARE = 0.01
NAMED_IN_ANSWER = 3


class NonGemmKernel(TypedDict):
    kernel: str
    category: str
    calls_per_pass: float
    ms_per_pass: float
    share: float


class CategoryShare(TypedDict):
    category: str
    ms_per_pass: float
    share: float


class Record(TypedDict):
    """The per-trace record of (c), in the summary's ``questions["c"]``."""

    min_share: float
    non_gemm_share: float | None
    top_non_gemm_forward: list[NonGemmKernel]
    non_gemm_categories_forward: list[CategoryShare]
    answer: str


def per_trace(inputs: NsysInputs) -> dict:
    """Answer (c) for one trace: non-GEMM kernels and categories above the threshold, with their shares."""
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


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """Per trace: the non-matmul share of forward kernel time by category; and the kernels above
    the threshold."""
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "c", ("non_gemm_share",), "non_gemm_share")
    if table.empty:
        return Unanswered("nsys-c", "a trace with kernels in measured `forward` ranges")
    by_trace = {run_label(s): s["questions"]["c"] for s in summaries if s["questions"]["c"].get("non_gemm_share") is not None}
    shares = pd.DataFrame([{f"{row['category']}_share": row["share"] for row in by_trace[label]["non_gemm_categories_forward"]}
                           for label in table["trace"]], index=table.index)
    table = pd.concat([table, shares.fillna(0.0)], axis=1)
    kernels = pd.DataFrame([{"trace": label, **row} for label, answer in by_trace.items()
                            for row in answer["top_non_gemm_forward"]])
    tables = {"Non-matmul share of forward kernel time, by category": table}
    if not kernels.empty:
        kernels["kernel"] = kernels["kernel"].map(grid.kernel_cell)
        tables["Non-matmul kernels above 1% of forward kernel time"] = kernels
    return grid.finish("nsys-c", tables, summaries)


def category_shares(table: pd.DataFrame) -> pd.DataFrame:
    """The per-category share columns of the cross-trace table, named by category."""
    shares = table[[c for c in table if c.endswith("_share") and c != "non_gemm_share"]]
    return shares.rename(columns=lambda c: c.removesuffix("_share"))


def _grid_text(record: ResultsAnswer) -> str:
    table = grid.first_table(record)
    shares = category_shares(table)
    leaders = shares.idxmax(axis=1).value_counts() if not shares.empty else pd.Series(dtype=int)
    text = f"Kernels other than matrix multiplications take {grid.pct_span(table['non_gemm_share'])} of forward kernel " \
           f"time over {len(table)} traces"
    return text + (f"; the largest of them is {leaders.index[0]} in {leaders.iloc[0]} traces." if not leaders.empty else ".")


QUESTION = Question(
    id="nsys-c", section="nsys_profile", title="Non-matmul kernels",
    text="Which non-matmul kernels take non-trivial time in the forward pass?",
    needs="nsys traces of the runner (analyze-nsys TRACE ...)",
    per_trace=per_trace, record=Record, summary_key="c", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("category_stack", {
        "xlabel": "share of forward kernel time (%)", "title": "Non-matmul kernels in the forward pass, by category"}),
)
