"""nsys_profile (d): the share of GPU kernel time spent in matrix multiplication, forward only
(inference) against a complete training step, and how the other categories move.

Shares are fractions of summed KERNEL time; memcpy/memset are excluded because they are copies,
not computation, and the question compares kernel mixes. The training step is every kernel of
the measured ``step_<i>`` ranges (forward, loss, backward, optimizer step and anything between).
Needs: measured ``forward`` ranges; a measured ``optimizer_step`` for the training-step side.
"""
from __future__ import annotations

import pandas as pd

from analysis.classify import GEMM
from analysis.questions import nsys_text as text
from analysis.questions.nsys_inputs import NsysInputs

MOVERS_IN_ANSWER = 2


def answer(inputs: NsysInputs) -> dict:
    """Answer (d): GEMM share forward vs training step, and every category's share in both.

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
    """Fraction of summed kernel time per category (empty when there are no kernels)."""
    per_category = kernels.groupby("category")["dur_ns"].sum()
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
