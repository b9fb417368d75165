"""ckpt-b (2026 handout): the best number of blocks per checkpoint group K for one level of
activation recomputation, its measured peak memory, and the peaks of the next smaller and larger K.

Reads the ``checkpoint`` experiment (one row per K; ``checkpoint_every`` 0 = no checkpointing;
OOM rows have null measurements). Why the best K is best comes from the same rows: a straight line
through the completed peaks against K gives the memory one more block in a group costs (its
activations, kept while the group is recomputed), against the group input that every group keeps
(batch × context × d_model × 4 B, from the rows' dims): with N blocks, peak(K) ≈ base + (N/K)·input
+ K·block, least at K = √(N·input/block).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.questions.question import Question, from_results
from analysis.questions.records import EDITION_2026, FigureSpec
from analysis.questions.shared.results_files import ResultsAnswer, ResultsSet, Unanswered, used_files
from cs336_profile.contract import CHECKPOINT, GIB, MIB, STATUS_OK

if TYPE_CHECKING:
    import pandas as pd

RUN_CHECKPOINT = "python -m cs336_profile.run checkpoint on a CUDA device (2026 xl, batch 4, context 2048)"
FP32_BYTES = 4


def checkpoint_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per K tried (no checkpointing last): status, peak memory and step time."""
    table = rows[["checkpoint_every", "status", "peak_memory_bytes", "step_ms_mean"]].copy()
    table["blocks_per_group"] = table.pop("checkpoint_every").astype(int)
    table = table.assign(_none=table["blocks_per_group"] == 0).sort_values(["_none", "blocks_per_group"])
    return table.drop(columns="_none")[["blocks_per_group", "status", "peak_memory_bytes", "step_ms_mean"]] \
        .reset_index(drop=True)


def _peak_text(row: pd.Series) -> str:
    if row["status"] != STATUS_OK:
        return f"K={row['blocks_per_group']}: {row['status']}"
    return f"K={row['blocks_per_group']}: {row['peak_memory_bytes'] / GIB:,.1f} GiB"


def answer_ckpt_b(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """ckpt-b from the checkpoint experiment's rows."""
    rows = results.experiment_rows(CHECKPOINT)
    if rows.empty or "checkpoint_every" not in rows:
        return Unanswered("ckpt-b", f"a `{CHECKPOINT}` results file ({RUN_CHECKPOINT})")
    table = checkpoint_table(rows)
    grouped = table[table["blocks_per_group"] > 0]
    done = grouped[grouped["status"] == STATUS_OK]
    if done.empty:
        return Unanswered("ckpt-b", f"a `{CHECKPOINT}` results file with a completed K ({RUN_CHECKPOINT})")
    best = done.loc[done["peak_memory_bytes"].idxmin()]
    k = best["blocks_per_group"]
    smaller, larger = grouped[grouped["blocks_per_group"] < k], grouped[grouped["blocks_per_group"] > k]
    first = rows.iloc[0]
    text = (f"For {first['handout']} {first['size']} at batch {first['batch_size']} and context "
            f"{first['context_length']} ({first['dtype']}), the best block size is K={k}: peak "
            f"{best['peak_memory_bytes'] / GIB:,.1f} GiB at {best['step_ms_mean']:,.0f} ms per step. Next smaller: "
            f"{_peak_text(smaller.iloc[-1]) if len(smaller) else 'none tried'}; next larger: "
            f"{_peak_text(larger.iloc[0]) if len(larger) else 'none tried'}.")
    numbers = {"best_k": int(k), "best_peak_bytes": float(best["peak_memory_bytes"])}
    if len(done) >= 3:
        numbers.update(_why(done, first))
        text += _why_text(numbers, len(done), int(first["num_layers"]))
    none = table[table["blocks_per_group"] == 0]
    if len(none):
        text += f" Without checkpointing: {none.iloc[0]['status'] if none.iloc[0]['status'] != STATUS_OK else _peak_text(none.iloc[0])}."
    return ResultsAnswer("ckpt-b", text, {"Peak memory per blocks per checkpoint group": table},
                         used_files(rows), numbers)


def _why(done: pd.DataFrame, first: pd.Series) -> dict:
    """Fit peak = base + K·block + (N/K)·group over the completed K; the optimum K = √(N·group/block)."""
    import numpy as np

    blocks = int(first["num_layers"])
    k = done["blocks_per_group"].to_numpy(dtype=float)
    peaks = done["peak_memory_bytes"].to_numpy(dtype=float)
    design = np.c_[np.ones_like(k), k, blocks / k]
    (base, block, group), *_ = np.linalg.lstsq(design, peaks, rcond=None)
    return {"block_bytes": float(block), "group_bytes": float(group),
            "fit_error_bytes": float(np.abs(design @ [base, block, group] - peaks).max()),
            "group_input_bytes": int(first["batch_size"]) * int(first["context_length"]) * int(first["d_model"])
            * FP32_BYTES,
            "optimal_k": float(np.sqrt(blocks * max(group, 0.0) / block)) if block > 0 else float("nan")}


def _why_text(numbers: dict, completed: int, blocks: int) -> str:
    import numpy as np

    text = (f" Why: fitting peak = base + K·block + ({blocks}/K)·group to the {completed} completed K (off by at "
            f"most {numbers['fit_error_bytes'] / MIB:,.0f} MiB), each block in a group costs "
            f"{numbers['block_bytes'] / GIB:,.2f} GiB (its activations, kept while the group is recomputed) and each "
            f"further group {numbers['group_bytes'] / MIB:,.1f} MiB of the peak (a group's input tensor is "
            f"{numbers['group_input_bytes'] / MIB:,.0f} MiB).")
    if not np.isfinite(numbers["optimal_k"]):
        return text
    return text + (f" The peak is least at K = √({blocks}·group/block) = {numbers['optimal_k']:.2f}, so "
                   f"K={max(1, round(numbers['optimal_k']))} among whole block counts; √N ≈ {np.sqrt(blocks):.1f} "
                   "would be best only if a group cost about as much as a block's activations.")


CKPT_B = Question(
    id="ckpt-b", section="Gradient checkpointing", title="Best checkpoint block size (one level)",
    text="For xl at batch 4 and sequence length 2048, with one level of recomputation: the best block size, its "
         "measured peak memory, and the peak memory of the next smaller and next larger block sizes.",
    needs=f"a `{CHECKPOINT}` results file ({RUN_CHECKPOINT})",
    compute=from_results(answer_ckpt_b), editions=(EDITION_2026,),
    figure=FigureSpec("ckpt-b", alt="Peak memory against blocks per checkpoint group; OOM marked"),
)
