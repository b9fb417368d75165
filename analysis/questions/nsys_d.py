"""nsys_profile (d): the share of GPU kernel time spent in matrix multiplication, forward only
(inference) against a complete training step, and how the other categories move.

Shares are fractions of summed KERNEL time; memcpy/memset are excluded because they are copies,
not computation, and the question compares kernel mixes. The training step is every kernel of
the measured ``step_<i>`` ranges (forward, loss, backward, optimizer step and anything between).
Needs: measured ``forward`` ranges; a measured ``optimizer_step`` for the training-step side.
"""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

from analysis.core import text
from analysis.core.classify import GEMM
from analysis.core.runs import run_label, runs_of, sorted_summaries
from analysis.questions.question import Evidence, Question
from analysis.questions.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.questions.shared import nsys_grid as grid
from analysis.questions.shared.results_files import plural
from analysis.trace.nsys_inputs import NsysInputs

MOVERS_IN_ANSWER = 2


class CategoryShares(TypedDict):
    category: str
    forward_share: float
    train_step_share: float | None
    change: float | None


class Record(TypedDict):
    """The per-trace record of (d), in the summary's ``questions["d"]``."""

    gemm_share_forward: float | None
    gemm_share_forward_backward: float | None
    gemm_share_train_step: float | None
    category_shares: list[CategoryShares]
    answer: str


def per_trace(inputs: NsysInputs) -> dict:
    """Answer (d) for one trace: GEMM share forward vs training step, and every category's share in both.

    ``category_shares`` rows: ``category``, ``forward_share``, ``train_step_share`` and ``change``
    (train-step share minus forward share); the last two null when there is no training step.
    """
    forward = _shares(inputs.measured_kernels(("forward",)))
    if forward.empty:
        return {
            "gemm_share_forward": None,
            "gemm_share_forward_backward": None,
            "gemm_share_train_step": None,
            "category_shares": [],
            "answer": inputs.no_kernels_reason("forward") + ", so it cannot give the forward GEMM share.",
        }
    has_backward = inputs.passes("backward") > 0
    has_train_step = has_backward and inputs.passes("optimizer_step") > 0
    forward_backward = _shares(inputs.measured_kernels(("forward", "backward"))) if has_backward else None
    train = _shares(inputs.measured_kernels()) if has_train_step else None

    table = forward.rename("forward_share").to_frame()
    if has_train_step:
        table = table.join(train.rename("train_step_share"), how="outer").fillna(0.0)
        table["change"] = table["train_step_share"] - table["forward_share"]
    else:
        table = table.assign(train_step_share=None, change=None)
    table = table.sort_values("forward_share", ascending=False).rename_axis("category").reset_index()

    gemm_forward = float(forward.get(GEMM, 0.0))
    sentence = f"Matrix multiplications take {text.pct(gemm_forward)} of forward kernel time"
    if has_train_step:
        gemm_train = float(train.get(GEMM, 0.0))
        sentence += f" and {text.pct(gemm_train)} of a full training step (kernel time, memcpy/memset excluded)."
        sentence += " " + _movers_sentence(table)
    else:
        gemm_train = None
        missing = "optimizer step" if has_backward else "backward pass or optimizer step"
        sentence += f" (kernel time, memcpy/memset excluded); the trace has no measured {missing}, so a training step cannot be compared."
    return {
        "gemm_share_forward": gemm_forward,
        "gemm_share_forward_backward": float(forward_backward.get(GEMM, 0.0)) if forward_backward is not None else None,
        "gemm_share_train_step": gemm_train,
        "category_shares": table.to_dict("records"),
        "answer": sentence,
    }


def _shares(kernels: pd.DataFrame) -> pd.Series:
    """Fraction of summed kernel time per category (empty when there are no kernels): indexed by
    the categories present, in the order of the ``category`` column's categories, as a groupby
    would give, summed on its codes."""
    category = kernels["category"].array
    codes = category.codes
    known = codes >= 0
    summed = np.bincount(codes[known], weights=kernels["dur_ns"].to_numpy()[known], minlength=len(category.categories))
    present = np.bincount(codes[known], minlength=len(category.categories)) > 0
    index = pd.CategoricalIndex(category.categories[present], categories=category.categories,
                                ordered=category.ordered, name="category")
    per_category = pd.Series(summed[present].astype(np.int64), index=index, name="dur_ns")
    total = per_category.sum()
    return per_category / total if total else per_category.astype(float)


def _movers_sentence(table: pd.DataFrame) -> str:
    others = table[table["category"] != GEMM]
    movers = others.reindex(others["change"].abs().sort_values(ascending=False).index).head(MOVERS_IN_ANSWER)
    parts = [
        f"{row.category} {'rises' if row.change > 0 else 'falls'} from {text.pct(row.forward_share)} to {text.pct(row.train_step_share)}"
        for row in movers.itertuples()
        if row.change != 0
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
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "d", KEYS, "gemm_share_forward")
    if table.empty:
        return Unanswered("nsys-d", "a trace with kernels in measured `forward` ranges")
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
    return grid.finish("nsys-d", tables, summaries)


def _optimizer_share(summary: dict) -> float | None:
    """The optimizer step's share of the kernel time of a training step (None without one)."""
    phases = summary.get("phases") or {}
    if "optimizer_step" not in phases:
        return None
    total = sum(figures["kernel_ms_per_pass"] for figures in phases.values())
    return phases["optimizer_step"]["kernel_ms_per_pass"] / total if total else None


def _grid_text(record: ResultsAnswer) -> str:
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
    per_trace=per_trace, record=Record, summary_key="d", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["forward", "gemm_share_forward", 100], ["training step", "gemm_share_train_step", 100]],
        "xlabel": "matmul share of kernel time (%)", "xlim": [0, 100],
        "title": "Matrix multiplication: inference against training"}),
)
