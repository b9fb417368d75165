"""nsys_profile (c): the non-matmul kernels with non-trivial time in the forward pass, by kernel
and by category. "Non-trivial" is more than :data:`MIN_SHARE` of forward kernel time.

Each kernel is named as an operation: its label (:func:`analysis.core.kernel_names.kernel_label`) and
the NVTX region its time falls in (an attention sub-range: the T² score work, or outside them).
Across traces: the non-matmul share per like-for-like group and its trend with context length.

Needs: kernels attributed to measured ``forward`` ranges.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.core import text
from analysis.core.runs import is_multi_gpu_group, run_label, runs_of, sorted_summaries
from analysis.questions.question import Evidence, Question
from analysis.questions.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.questions.shared import nsys_grid as grid
from analysis.questions.shared import trace_text
from analysis.trace.question_figures import nsys_c as trace_figures
from analysis.trace.question_figures.nsys_c import MIN_SHARE, OUTSIDE

if TYPE_CHECKING:
    import pandas as pd

LEADERS_TITLE = "The leading non-matmul kernel of each trace"
KERNELS_TITLE = "Non-matmul kernels above 1% of forward kernel time, every trace"
NAMED_IN_ANSWER = 3

# The non-matmul time by operation, as the NVTX ranges tell it: the softmax's range, the scores'
# range (their scaling and masking besides the GEMM), and everything outside attention, where no
# range tells RMSNorm, RoPE, SwiGLU, residual adds and casts apart.
OPERATION_COLUMNS = {"softmax": "softmax_range_share", "attention scores": "scores_range_share",
                     OUTSIDE: "outside_attention_share"}


def write_trace(record: dict, summary: dict) -> str:
    """(c)'s sentence for one trace (:func:`_trace_text`), with the warning for kernel time that
    ran inside CUDA graphs traced whole (:func:`~analysis.questions.shared.trace_text.whole_graphs_note`)."""
    return _trace_text(record, summary) + trace_text.whole_graphs_note(summary)


def _trace_text(record: dict, summary: dict) -> str:
    """(c)'s sentence for one trace: the non-matmul share, the kernels above the threshold named
    as operations, the categories, and the share inside the attention sub-ranges."""
    if record["non_gemm_share"] is None:
        return trace_text.no_kernels_reason(summary, "forward") + ", so it cannot break the forward pass down."
    non_gemm_share, notable = record["non_gemm_share"], record["top_non_gemm_forward"]
    sentence = (
        f"Kernels other than matrix multiplications take {text.pct(non_gemm_share)} of forward kernel time "
        f"({text.ms(record['non_gemm_ms_per_pass'])} per pass); "
    )
    if not notable:
        sentence += f"none of them alone exceeds {text.pct(MIN_SHARE)}."
    else:
        named = ", ".join(
            f"{text.kernel_label(row['kernel'])} ({row['category']}, {text.pct(row['share'])}, "
            + (f"in the {row['region']} range)" if row["region"] != OUTSIDE else f"{row['region']})")
            for row in notable[:NAMED_IN_ANSWER]
        )
        sentence += f"{len(notable)} of them exceed {text.pct(MIN_SHARE)} each, led by {named}."
    category_rows = record["non_gemm_categories_forward"]
    if category_rows:
        listed = ", ".join(f"{row['category']} {text.pct(row['share'])}" for row in category_rows[:NAMED_IN_ANSWER])
        sentence += f" By category: {listed}."
    attention_share = record["attention_non_gemm_share"]
    if attention_share:
        sentence += (f" Inside the attention sub-ranges (the score matrix's scale, mask, softmax: T² work) they take "
                     f"{text.pct(attention_share)} of forward kernel time, outside them "
                     f"{text.pct(non_gemm_share - attention_share)}.")
    return sentence


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """Per trace: the non-matmul share of forward kernel time, the part inside the attention
    sub-ranges, by category; and the kernels above the threshold with their labels and regions."""
    import pandas as pd

    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "c", ("non_gemm_share", "attention_non_gemm_share"), "non_gemm_share",
                      ("size", "context_length", "mode"), sorts_kernels=True)
    if table.empty:
        return Unanswered("nsys-c", grid.forward_kernels_needed(summaries))
    by_trace = {run_label(s): s["questions"]["c"] for s in summaries
                if s["questions"]["c"].get("non_gemm_share") is not None and not grid.left_out(s, sorts_kernels=True)}
    operations = pd.DataFrame([{column: _region_share(by_trace[label], region) for region, column in OPERATION_COLUMNS.items()}
                               for label in table["trace"]], index=table.index)
    shares = pd.DataFrame([{f"{row['category']}_share": row["share"] for row in by_trace[label]["non_gemm_categories_forward"]}
                           for label in table["trace"]], index=table.index)
    table = pd.concat([table, operations.dropna(axis="columns", how="all"), shares], axis=1)
    trend = _context_trend(table)
    table = table.drop(columns=["size", "mode"], errors="ignore")
    kernels = pd.DataFrame([{"trace": label, **{k: v for k, v in row.items() if k != "label"}}
                            for label, answer in by_trace.items() for row in answer["top_non_gemm_forward"]])
    tables = {"Non-matmul share of forward kernel time, by category": table}
    if not kernels.empty:
        tables[LEADERS_TITLE] = kernels.drop_duplicates("trace").reset_index(drop=True)
    record = grid.finish("nsys-c", tables, summaries, sorts_kernels=True)
    if not kernels.empty:  # every kernel above the threshold of every trace: a file, not a wall on the page
        record.downloads[KERNELS_TITLE] = kernels
    record.numbers["leaders"] = {label: answer["top_non_gemm_forward"][0]["label"]
                                 for label, answer in by_trace.items() if answer["top_non_gemm_forward"]}
    if trend:
        record.numbers["context_trend"] = trend
    return record


def _context_trend(table: pd.DataFrame) -> str:
    """The non-matmul share (and its attention part) from the shortest to the longest context, per
    size, mode and group traced at more than one context length."""
    import pandas as pd

    trends, grows = [], []
    if not {"size", "mode", "context_length"} <= set(table):  # no run of the runner: no sizes to follow
        return ""
    for (size, mode, group), rows in table.dropna(subset=["size", "mode"]).groupby(["size", "mode", "group"], sort=False):
        if rows["context_length"].nunique() < 2:
            continue
        rows = rows.sort_values("context_length")
        first, last = rows.iloc[0], rows.iloc[-1]
        trend = (f"{size} {mode} {group} {text.pct(first['non_gemm_share'])} at {int(first['context_length'])} → "
                 f"{text.pct(last['non_gemm_share'])} at {int(last['context_length'])}")
        if pd.notna(first.get("attention_non_gemm_share")) and pd.notna(last.get("attention_non_gemm_share")):
            trend += (f" (inside attention {text.pct(first['attention_non_gemm_share'])} → "
                      f"{text.pct(last['attention_non_gemm_share'])})")
            grows.append(last["attention_non_gemm_share"] > first["attention_non_gemm_share"])
        trends.append(trend)
    if not trends:
        return ""
    lead = ("the non-matmul time inside attention (T² work) grows in every series" if grows and all(grows)
            else "the non-matmul share moves")
    return f"With context length {lead}: " + "; ".join(trends) + "."


def _region_share(record: dict, region: str) -> float | None:
    """A region's share of forward kernel time in a per-trace record; None where the trace has no
    attention sub-ranges at all (0 where it has them but this one launched nothing)."""
    regions = {row["region"]: row["share"] for row in record.get("non_gemm_by_region") or []}
    if not set(regions) - {OUTSIDE}:
        return None
    return regions.get(region, 0.0)


def category_shares(table: pd.DataFrame) -> pd.DataFrame:
    """The per-category share columns of the cross-trace table, named by category."""
    shares = table[[c for c in table if c.endswith("_share")
                    and c not in ("non_gemm_share", "attention_non_gemm_share", *OPERATION_COLUMNS.values())]]
    return shares.rename(columns=lambda c: c.removesuffix("_share"))


def _grid_text(record: ResultsAnswer) -> str:
    """Per group the non-matmul share and, where NVTX ranges tell, how much of it each operation
    takes; the leading kernels and categories and the trend with context length as evidence."""
    import pandas as pd

    table = grid.first_table(record)
    leaders = record.numbers.get("leaders", {})
    lead, details = [], []
    for group, rows in table.groupby("group", sort=False):
        sentence = (f"Among {runs_of(group)} ({text.plural(len(rows), 'trace')}) kernels other than matrix multiplications "
                    f"take {grid.pct_span(rows['non_gemm_share'])} of forward kernel time")
        if rows.get("softmax_range_share", pd.Series(dtype=float)).notna().any():
            sentence += (f": the softmax's NVTX range {grid.pct_span(rows['softmax_range_share'].dropna())}, the scores' "
                         f"scale and mask {grid.pct_span(rows['scores_range_share'].dropna())}, and outside attention "
                         f"(RMSNorm, RoPE, SwiGLU, residual adds, casts: no range tells them apart) "
                         f"{grid.pct_span(rows['outside_attention_share'].dropna())}")
        (details if is_multi_gpu_group(group) else lead).append(sentence + ".")
        shares = category_shares(rows).dropna(axis="columns", how="all")
        named = pd.Series([leaders[t] for t in rows["trace"] if t in leaders]).value_counts()
        if not shares.empty and len(named):
            top = shares.mean().idxmax()
            details.append(f"By kernel name in {runs_of(group)} the largest category is {top} "
                           f"({grid.pct_span(shares[top].dropna())}) and the leading non-matmul kernel is most often "
                           f"`{named.index[0]}` ({named.iloc[0]} of {len(rows)}).")
    if table.get("softmax_range_share", pd.Series(dtype=float)).notna().any():
        details.append("The eager softmax and RMSNorm are written out (max, exp, sum, divide; square, mean, rsqrt, "
                       "multiply), so their time sits in elementwise and reduction kernels, not in a kernel named after "
                       "them; only the NVTX ranges attribute it.")
    details.append(record.numbers.get("context_trend", ""))
    return text.answer_text(lead, details)


QUESTION = Question(
    id="nsys-c", section="nsys_profile", title="Non-matmul kernels",
    text="Which non-matmul kernels take non-trivial time in the forward pass?",
    needs=grid.NEEDS_TRACES,
    per_trace=trace_figures.figures, record=trace_figures.Record, write_trace=write_trace, summary_key="c", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("category_stack", {
        "xlabel": "share of forward kernel time (%)", "title": "Non-matmul kernels in the forward pass, by category"}),
)
