"""nsys_profile (d): the share of GPU kernel time spent in matrix multiplication, forward only
(inference) against a complete training step, and how the other categories move.

Shares are fractions of summed KERNEL time; memcpy/memset are excluded because they are copies,
not computation, and the question compares kernel mixes. The training step is every kernel of
the measured ``step_<i>`` ranges (forward, loss, backward, optimizer step and anything between).
Needs: measured ``forward`` ranges; a measured ``optimizer_step`` for the training-step side.
"""
from __future__ import annotations

from analysis.core import text
from analysis.core.classify import GEMM
from analysis.core.runs import run_label, runs_of, sorted_summaries
from analysis.questions.question import Evidence, Question
from analysis.questions.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.questions.shared import nsys_grid as grid
from analysis.questions.shared import trace_text
from analysis.questions.shared.results_files import plural
from analysis.trace.question_figures import nsys_d as trace_figures

MOVERS_IN_ANSWER = 2


def write_trace(record: dict, summary: dict) -> str:
    """(d)'s sentence for one trace (:func:`_trace_text`), with the warning for kernel time that
    ran inside CUDA graphs traced whole (:func:`~analysis.questions.shared.trace_text.whole_graphs_note`)."""
    return _trace_text(record, summary) + trace_text.whole_graphs_note(summary)


def _trace_text(record: dict, summary: dict) -> str:
    """(d)'s sentence for one trace: the GEMM share forward and in a training step, and the other
    categories that move most between them."""
    if record["gemm_share_forward"] is None:
        return trace_text.no_kernels_reason(summary, "forward") + ", so it cannot give the forward GEMM share."
    sentence = f"Matrix multiplications take {text.pct(record['gemm_share_forward'])} of forward kernel time"
    if record["gemm_share_train_step"] is not None:
        sentence += (f" and {text.pct(record['gemm_share_train_step'])} of a full training step (kernel time, "
                     "memcpy/memset excluded).")
        return sentence + " " + _movers_sentence(record["category_shares"])
    missing = "optimizer step" if trace_text.passes(summary, "backward") > 0 else "backward pass or optimizer step"
    return sentence + (f" (kernel time, memcpy/memset excluded); the trace has no measured {missing}, so a training "
                       "step cannot be compared.")


def _movers_sentence(rows: list[dict]) -> str:
    """The categories but GEMM whose share moves most from the forward pass to the training step
    (``category_shares`` rows, in their order where the moves are equal)."""
    others = [row for row in rows if row["category"] != GEMM]
    movers = sorted(others, key=lambda row: abs(row["change"]), reverse=True)[:MOVERS_IN_ANSWER]
    parts = [
        f"{row['category']} {'rises' if row['change'] > 0 else 'falls'} from {text.pct(row['forward_share'])} "
        f"to {text.pct(row['train_step_share'])}"
        for row in movers
        if row["change"] != 0
    ]
    if not parts:
        return "The other categories keep their shares."
    return "Among the other categories, " + " and ".join(parts) + "."


KEYS = ("gemm_share_forward", "gemm_share_forward_backward", "gemm_share_train_step")
CATEGORIES_TITLE = "Every category, forward against the training step"


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """Per trace: the GEMM shares and the optimizer step's share of a training step's kernel time;
    and every category's share, forward against the training step; rows in like-for-like groups
    (:func:`~analysis.core.runs.run_group`)."""
    import pandas as pd

    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "d", KEYS, "gemm_share_forward", sorts_kernels=True)
    if table.empty:
        return Unanswered("nsys-d", grid.forward_kernels_needed(summaries))
    optimizer = {run_label(s): _optimizer_share(s) for s in summaries}
    table["optimizer_share_train_step"] = table["trace"].map(optimizer)
    optimizer_gemm = {run_label(s): ((s.get("phases") or {}).get("optimizer_step") or {})
                      .get("by_category_ms_per_pass", {}).get(GEMM, 0.0) for s in summaries}
    table["optimizer_gemm_ms_per_pass"] = table["trace"].map(optimizer_gemm).where(
        table["optimizer_share_train_step"].notna())
    groups = dict(zip(table["trace"], table["group"]))
    categories = pd.DataFrame([{"trace": run_label(s), "group": groups.get(run_label(s)), **row} for s in summaries
                               if run_label(s) in groups for row in s["questions"]["d"].get("category_shares") or []])
    categories = categories.rename(columns={"change": "change_share"})
    tables = {"Matmul share of kernel time": table}
    if not categories.empty:
        tables[CATEGORIES_TITLE] = categories
    return grid.finish("nsys-d", tables, summaries, sorts_kernels=True)


def _optimizer_share(summary: dict) -> float | None:
    """The optimizer step's share of the kernel time of a training step's phases (None without
    one): each phase's time per pass weighed by its passes, since with gradient accumulation a
    step holds several forward and backward passes and one optimizer step."""
    phases = summary.get("phases") or {}
    if "optimizer_step" not in phases:
        return None
    total = sum(figures["kernel_ms_per_pass"] * figures["passes"] for figures in phases.values())
    optimizer = phases["optimizer_step"]
    return optimizer["kernel_ms_per_pass"] * optimizer["passes"] / total if total else None


def _grid_text(record: ResultsAnswer) -> str:
    import pandas as pd

    table = grid.first_table(record)
    categories = record.tables.get(CATEGORIES_TITLE, pd.DataFrame())
    parts = []
    for group, rows in table.groupby("group", sort=False):
        sentence = (f"Among {runs_of(group)} ({plural(len(rows), 'trace')}) matrix multiplications take "
                    f"{grid.pct_span(rows['gemm_share_forward'])} of forward kernel time")
        train = rows.dropna(subset=["gemm_share_train_step"]) if "gemm_share_train_step" in rows else rows.iloc[:0]
        if train.empty:
            parts.append(sentence + " (no trace of a full training step to compare).")
            continue
        if "gemm_share_forward_backward" in train and train["gemm_share_forward_backward"].notna().any():
            sentence += f", {grid.pct_span(train['gemm_share_forward_backward'].dropna())} of forward + backward"
        sentence += (f" and {grid.pct_span(train['gemm_share_train_step'])} of a full training step "
                     f"({plural(len(train), 'training trace')})")
        if train["optimizer_share_train_step"].notna().any():
            no_gemm = not train["optimizer_gemm_ms_per_pass"].fillna(0).any()
            sentence += (f"; the optimizer step{', which runs no matmul,' if no_gemm else ''} takes "
                         f"{grid.pct_span(train['optimizer_share_train_step'].dropna())} of the step's kernel time")
        in_group = categories[categories["group"] == group] if "group" in categories else categories.iloc[:0]
        change = in_group.dropna(subset=["change_share"]) if "change_share" in in_group else in_group
        if not change.empty:
            mean_change = change[change["category"] != GEMM].groupby("category")["change_share"].mean()
            if len(mean_change) and mean_change.max() > 0:
                sentence += (f"; the category that gains most is {mean_change.idxmax()} "
                             f"(+{mean_change.max() * 100:.1f} points on average)")
        parts.append(sentence + ".")
    return " ".join(parts)


QUESTION = Question(
    id="nsys-d", section="nsys_profile", title="Matmul share: inference against training",
    text="Fraction of GPU time in matrix multiplication, forward only against a full training step; "
         "how do the other categories move?",
    needs=grid.NEEDS_TRACES,
    per_trace=trace_figures.figures, record=trace_figures.Record, write_trace=write_trace, summary_key="d", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["forward", "gemm_share_forward", 100], ["training step", "gemm_share_train_step", 100]],
        "xlabel": "matmul share of kernel time (%)", "xlim": [0, 100],
        "title": "Matrix multiplication: inference against training"}),
)
