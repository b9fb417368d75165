"""Attention alone (attn-a): eager attention over head dimension × sequence length, its times,
the memory in use before backward, the configurations that ran out of memory, and how the memory
saved for backward grows with the sequence length.

Reads the ``attention`` results (one row per implementation, head_dim, seq_len). The memory
accounting is fitted to the measurements: memory saved for backward (in use before backward
minus before forward) divided by one batch × seq × seq fp32 score matrix gives how many such
matrices autograd keeps; that count predicts the smallest configuration that ran out of memory.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.questions.question import Question, from_results
from analysis.questions.records import FigureSpec
from analysis.questions.shared.results_files import ResultsAnswer, ResultsSet, Unanswered, ok_rows, used_files
from cs336_profile.contract import ATTENTION, FP32_BYTES, GIB, MIB

if TYPE_CHECKING:
    import pandas as pd

EAGER = "eager"
SDPA = "sdpa"
INT64_BYTES, BOOL_BYTES = 8, 1
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
    import numpy as np

    done = ok_rows(rows).dropna(subset=["saved_for_backward_bytes"])
    done = done[done["saved_for_backward_bytes"] > 0]
    if done["seq_len"].nunique() < 2:
        return None
    return float(np.polyfit(np.log(done["seq_len"]), np.log(done["saved_for_backward_bytes"]), 1)[0])


def saved_tensors(batch: int, seq: int, head_dim: int) -> pd.DataFrame:
    """What eager attention (``model.scaled_dot_product_attention`` with its written-out softmax)
    holds between forward and backward beyond its inputs, one row per tensor, with its bytes and
    whether backward needs it (None: the result, which autograd does not keep). q, k, v and the mask exist before the forward and are not counted."""
    import pandas as pd

    score = batch * seq * seq * FP32_BYTES
    rows = [
        ("exp", "torch.exp in softmax, kept by exp / sum", f"{batch}×{seq}×{seq} fp32", score, False),
        ("weights", "softmax output, kept by the final einsum", f"{batch}×{seq}×{seq} fp32", score, True),
        ("~mask", "the inverted mask masked_fill keeps", f"{seq}×{seq} bool", seq * seq * BOOL_BYTES, False),
        ("output", "the result, held by the caller (autograd saves none of it)", f"{batch}×{seq}×{head_dim} fp32",
         batch * seq * head_dim * FP32_BYTES, None),
        ("max indices", "kept by max", f"{batch}×{seq}×1 int64", batch * seq * INT64_BYTES, False),
        ("row sums", "exp.sum, kept by exp / sum", f"{batch}×{seq}×1 fp32", batch * seq * FP32_BYTES, False),
    ]
    return pd.DataFrame(rows, columns=["tensor", "made_by", "shape", "size_bytes", "needed_by_backward"])


def smallest_oom(rows: pd.DataFrame) -> pd.Series | None:
    """The out-of-memory row with the fewest score elements (shortest sequence, then smallest d)."""
    oom = rows[rows["status"] == "OOM"]
    return None if oom.empty else oom.sort_values(["seq_len", "head_dim"]).iloc[0]


def _largest(rows: pd.DataFrame) -> pd.Series:
    """The completed row with the longest sequence, then the largest head dimension."""
    return ok_rows(rows).sort_values(["seq_len", "head_dim"]).iloc[-1]


def accounting_text(eager: pd.DataFrame, numbers: dict) -> str:
    """Theory against measurement at the largest completed configuration: what is saved, which of
    it backward needs, the peak, and how FlashAttention's tiling removes the T² terms."""
    import pandas as pd

    top = _largest(eager)
    batch, seq, d = int(top["batch_size"]), int(top["seq_len"]), int(top["head_dim"])
    parts = saved_tensors(batch, seq, d)
    score = batch * seq * seq * FP32_BYTES
    theory, measured, peak = parts["size_bytes"].sum(), top["saved_for_backward_bytes"], top["peak_memory_bytes"]
    unneeded = parts[parts["needed_by_backward"].eq(False)]["size_bytes"].sum()
    numbers.update(largest_seq_len=seq, largest_head_dim=d, score_matrix_bytes=score, saved_theory_bytes=theory,
                   saved_measured_bytes=measured, unneeded_bytes=unneeded, peak_bytes=peak,
                   peak_score_matrices=peak / score)
    text = (f" At the largest configuration (d={d}, T={seq}, batch {batch}) one {batch}×{seq}×{seq} fp32 matrix is "
            f"{score / MIB:,.0f} MiB. Autograd keeps {measured / MIB:,.1f} MiB for backward "
            f"({measured / score:.2f} such matrices); the model's code predicts {theory / MIB:,.1f} MiB: "
            f"`exp` and the softmax output `weights` ({2 * score / MIB:,.0f} MiB), the inverted causal mask "
            f"masked_fill keeps ({seq}×{seq} bool, {seq * seq / MIB:,.0f} MiB), the output and per-row max indices "
            f"and sums.")
    text += (f" Backward needs only `weights` of the T² tensors (softmax's gradient is y·(g − Σ g·y), from its "
             f"output alone): `exp`, the mask and the row statistics, {unneeded / MIB:,.1f} MiB, are kept for nothing. A fused softmax "
             f"keeps one T² matrix; FlashAttention keeps none: it saves the output and one log-sum-exp per row "
             f"({batch}×{seq}×4 B = {batch * seq * FP32_BYTES / MIB:.1f} MiB) and, in backward, recomputes the "
             "scores tile by tile from q and k in on-chip blocks, so its memory grows as T, not T².")
    if pd.notna(peak):
        text += (f" The measured peak of the cell is {peak / MIB:,.1f} MiB ({peak / score:.1f} T² matrices, "
                 "the saved ones plus the gradients backward materializes).")
    return text


def capacity_text(eager: pd.DataFrame, gpu_memory_bytes: int | None, numbers: dict) -> str:
    """The sequence length at which the largest head dimension's peak would fill the GPU (peak ∝ T²)."""
    import numpy as np
    import pandas as pd

    top = _largest(eager)
    if not gpu_memory_bytes or pd.isna(top["peak_memory_bytes"]):
        return ""
    limit = top["seq_len"] * np.sqrt(gpu_memory_bytes / top["peak_memory_bytes"])
    numbers["oom_seq_len_estimate"] = float(limit)
    return (f" With the peak growing as T², eager attention at d={int(top['head_dim'])} would fill this GPU's "
            f"{gpu_memory_bytes / GIB:.0f} GiB near T ≈ {limit:,.0f} (T × √(memory / peak)).")


def oom_accounting(rows: pd.DataFrame, gpu_memory_bytes: int | None) -> str:
    """Memory the smallest OOM configuration would need, from the fitted score-matrix count."""
    oom = smallest_oom(rows)
    if oom is None:
        return "No configuration ran out of memory" + (f" on the {gpu_memory_bytes / GIB:.0f} GiB GPU."
                                                       if gpu_memory_bytes else ".")
    matrices = ok_rows(rows)["score_matrices"].dropna()
    text = f"The smallest configuration that ran out of memory is d={oom['head_dim']}, seq={oom['seq_len']}."
    if matrices.empty:
        return text
    count = float(matrices[ok_rows(rows)["seq_len"] == ok_rows(rows)["seq_len"].max()].median())
    batch, seq, d = int(oom["batch_size"]), int(oom["seq_len"]), int(oom["head_dim"])
    score_bytes = batch * seq * seq * FP32_BYTES
    inputs_bytes = 3 * batch * seq * d * FP32_BYTES
    text += (f" Its accounting: one {batch}×{seq}×{seq} fp32 score matrix is {score_bytes / GIB:.2f} GiB; the completed "
             f"runs keep {count:.1f} such matrices for backward, so it needs about {count:.1f} × "
             f"{score_bytes / GIB:.2f} = {count * score_bytes / GIB:.1f} GiB plus {inputs_bytes / GIB:.3f} GiB of q, k, v")
    if gpu_memory_bytes:
        text += f", against the GPU's {gpu_memory_bytes / GIB:.0f} GiB"
    return text + "."


def implementations_at_largest(rows: pd.DataFrame) -> pd.DataFrame:
    """Every implementation at the largest configuration eager completed: times, memory saved for
    backward (and in score matrices), peak."""
    top = _largest(rows[rows["implementation"] == EAGER])
    cell = ok_rows(rows)[(rows["seq_len"] == top["seq_len"]) & (rows["head_dim"] == top["head_dim"])]
    return cell[["implementation", "head_dim", "seq_len", "forward_ms_mean", "backward_ms_mean",
                 "saved_for_backward_bytes", "score_matrices", "peak_memory_bytes"]].reset_index(drop=True)


def sdpa_text(cell: pd.DataFrame, numbers: dict) -> str:
    """What PyTorch's fused attention keeps, from the data: one T² matrix or less."""
    sdpa, eager = cell[cell["implementation"] == SDPA], cell[cell["implementation"] == EAGER]
    if sdpa.empty or eager.empty:
        return ""
    sdpa, eager = sdpa.iloc[0], eager.iloc[0]
    numbers.update(sdpa_score_matrices=sdpa["score_matrices"], sdpa_peak_bytes=sdpa["peak_memory_bytes"])
    kind = ("so this backend keeps a T² matrix: it is not FlashAttention, whose saved memory has no T² term"
            if sdpa["score_matrices"] >= 0.5 else "no T² matrix: the memory of a FlashAttention-style kernel")
    return (f" PyTorch's scaled_dot_product_attention (fp32, is_causal) keeps "
            f"{sdpa['saved_for_backward_bytes'] / MIB:,.0f} MiB ({sdpa['score_matrices']:.2f} T² matrices), {kind}; "
            f"its forward takes {sdpa['forward_ms_mean']:.1f} ms against eager's {eager['forward_ms_mean']:.1f} ms "
            f"and its peak is {sdpa['peak_memory_bytes'] / MIB:,.0f} MiB.")


def answer_attn_a(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """attn-a: eager attention's times and memory over the grid; OOMs, the memory accounting at the
    largest configuration, and the other implementations beside it."""
    rows = attention_rows(results)
    eager = rows[rows["implementation"] == EAGER] if not rows.empty else rows
    if eager.empty or ok_rows(eager).empty:
        return Unanswered("attn-a", f"an `{ATTENTION}` results file with eager rows ({RUN_ATTENTION})")
    table = eager[["head_dim", "seq_len", "status", "forward_ms_mean", "forward_ms_std", "backward_ms_mean",
                   "backward_ms_std", "memory_before_backward_bytes", "saved_for_backward_bytes", "score_matrices",
                   "peak_memory_bytes"]]
    done = ok_rows(eager)
    numbers: dict = {"completed": len(done), "configurations": len(eager)}
    text = f"Eager attention (batch {int(eager['batch_size'].iloc[0])}, {int(eager['passes'].iloc[0])} passes) " \
           f"completed {len(done)} of {len(eager)} configurations."
    exponent = growth_exponent(eager)
    if exponent is not None:
        numbers["growth_exponent"] = exponent
        text += f" The memory saved for backward grows as T^{exponent:.2f}: " \
                + ("quadratic, the T × T matrices kept for backward dominate."
                   if exponent > 1.5 else "still dominated by the inputs at these lengths, not yet by the scores.")
    gpu_memory = next((env.get("gpu_memory_bytes") for env in results.environments(ATTENTION)
                       if env.get("gpu_memory_bytes")), None)
    text += " " + oom_accounting(eager, gpu_memory)
    tables = {"Eager attention, batch × seq × d": table}
    if done["peak_memory_bytes"].notna().any() if "peak_memory_bytes" in done else False:
        top = _largest(eager)
        tables["What eager attention keeps for backward at the largest configuration"] = saved_tensors(
            int(top["batch_size"]), int(top["seq_len"]), int(top["head_dim"]))
        text += accounting_text(eager, numbers) + capacity_text(eager, gpu_memory, numbers)
        cell = implementations_at_largest(rows)
        if len(cell) > 1:
            tables["Every implementation at the largest configuration"] = cell
            text += sdpa_text(cell, numbers)
    return ResultsAnswer("attn-a", text, tables, used_files(rows), numbers)


ATTN_A = Question(
    id="attn-a", section="Attention", title="Attention at scale",
    text="Eager attention over head dimension × sequence length: time, memory before backward, out-of-memory "
         "configurations and their accounting.",
    needs=f"an `{ATTENTION}` results file with eager rows ({RUN_ATTENTION})",
    compute=from_results(answer_attn_a), figure=FigureSpec("attn-a", alt="Attention at scale"),
)
