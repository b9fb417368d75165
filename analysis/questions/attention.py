"""Attention alone (attn-a): eager attention over head dimension × sequence length, its times,
the memory in use before backward, the configurations that ran out of memory, and how the memory
saved for backward grows with the sequence length.

Reads the ``attention`` results (one row per implementation, head_dim, seq_len). The memory
accounting is fitted to the measurements: memory saved for backward (in use before backward
minus before forward) divided by one batch × seq × seq fp32 score matrix gives how many such
matrices autograd keeps; that count predicts the smallest configuration that ran out of memory.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.questions.question import Question, from_results
from analysis.records import FigureSpec
from analysis.questions.results_files import ResultsAnswer, ResultsSet, Unanswered, ok_rows, used_files
from cs336_profile.contract import ATTENTION, FP32_BYTES, GIB

EAGER = "eager"
RUN_ATTENTION = "python -m cs336_profile.run attention"


def attention_rows(results: ResultsSet) -> pd.DataFrame:
    """The attention rows with ``saved_for_backward_bytes`` and ``score_matrices`` (saved bytes per
    batch × seq × seq fp32 matrix)."""
    rows = results.experiment_rows(ATTENTION)
    if rows.empty:
        return rows
    saved = rows["memory_before_backward_bytes"] - rows["memory_before_forward_bytes"]
    score_matrix_bytes = rows["batch_size"] * rows["seq_len"] ** 2 * FP32_BYTES
    return rows.assign(saved_for_backward_bytes=saved, score_matrices=saved / score_matrix_bytes) \
        .sort_values(["implementation", "head_dim", "seq_len"], kind="stable").reset_index(drop=True)


def growth_exponent(rows: pd.DataFrame) -> float | None:
    """Slope of log(saved bytes) against log(seq_len) over completed rows (2 = quadratic)."""
    done = ok_rows(rows).dropna(subset=["saved_for_backward_bytes"])
    done = done[done["saved_for_backward_bytes"] > 0]
    if done["seq_len"].nunique() < 2:
        return None
    return float(np.polyfit(np.log(done["seq_len"]), np.log(done["saved_for_backward_bytes"]), 1)[0])


def smallest_oom(rows: pd.DataFrame) -> pd.Series | None:
    """The out-of-memory row with the fewest score elements (shortest sequence, then smallest d)."""
    oom = rows[rows["status"] == "OOM"]
    return None if oom.empty else oom.sort_values(["seq_len", "head_dim"]).iloc[0]


def oom_accounting(rows: pd.DataFrame, gpu_memory_bytes: int | None) -> str:
    """Memory the smallest OOM configuration would need, from the fitted score-matrix count."""
    oom = smallest_oom(rows)
    if oom is None:
        return "No configuration ran out of memory."
    matrices = ok_rows(rows)["score_matrices"].dropna()
    text = f"The smallest configuration that ran out of memory is d={oom['head_dim']}, seq={oom['seq_len']}."
    if matrices.empty:
        return text
    count = float(matrices[ok_rows(rows)["seq_len"] == ok_rows(rows)["seq_len"].max()].median())
    batch, seq, d = int(oom["batch_size"]), int(oom["seq_len"]), int(oom["head_dim"])
    score_bytes = batch * seq * seq * FP32_BYTES
    inputs_bytes = 3 * batch * seq * d * FP32_BYTES
    text += (f" Its accounting: one {batch}×{seq}×{seq} fp32 score matrix is {score_bytes / GIB:.2f} GiB; the completed "
             f"runs keep {count:.1f} such matrices for backward (scores, softmax output and their intermediates), "
             f"so it needs about {count:.1f} × {score_bytes / GIB:.2f} = {count * score_bytes / GIB:.1f} GiB plus "
             f"{inputs_bytes / GIB:.3f} GiB of q, k, v")
    if gpu_memory_bytes:
        text += f", against the GPU's {gpu_memory_bytes / GIB:.0f} GiB"
    return text + "."


def answer_attn_a(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """attn-a: eager attention's times and memory over the grid; OOMs and their accounting."""
    rows = attention_rows(results)
    eager = rows[rows["implementation"] == EAGER] if not rows.empty else rows
    if eager.empty:
        return Unanswered("attn-a", f"an `{ATTENTION}` results file with eager rows ({RUN_ATTENTION})")
    table = eager[["head_dim", "seq_len", "status", "forward_ms_mean", "forward_ms_std", "backward_ms_mean",
                   "backward_ms_std", "memory_before_backward_bytes", "saved_for_backward_bytes", "score_matrices"]]
    done = ok_rows(eager)
    text = f"Eager attention (batch {int(eager['batch_size'].iloc[0])}, {int(eager['passes'].iloc[0])} passes) " \
           f"completed {len(done)} of {len(eager)} configurations."
    exponent = growth_exponent(eager)
    if exponent is not None:
        text += f" The memory saved for backward grows as seq_len^{exponent:.2f}: " \
                + ("quadratic, the seq × seq scores and softmax kept for backward dominate."
                   if exponent > 1.5 else "still dominated by the inputs at these lengths, not yet by the scores.")
    gpu_memory = next((env.get("gpu_memory_bytes") for env in results.environments(ATTENTION)
                       if env.get("gpu_memory_bytes")), None)
    text += " " + oom_accounting(eager, gpu_memory)
    return ResultsAnswer("attn-a", text, {"Eager attention, batch × seq × d": table}, used_files(eager))


ATTN_A = Question(
    id="attn-a", section="Attention", title="Attention at scale",
    text="Eager attention over head dimension × sequence length: time, memory before backward, out-of-memory "
         "configurations and their accounting.",
    needs=f"an `{ATTENTION}` results file with eager rows ({RUN_ATTENTION})",
    compute=from_results(answer_attn_a), figure=FigureSpec("attn-a", alt="Attention at scale"),
)
