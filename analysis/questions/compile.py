"""torch.compile: compile-a (compiled attention next to eager over the attention grid) and
compile-b (the whole model compiled against eager: forward, and forward + backward + optimizer).

Reads the ``attention`` results (implementations ``eager`` and ``compiled``) and the ``compile``
results (bench rows of each size and mode, eager and compiled).
"""
from __future__ import annotations

import pandas as pd

from analysis.questions.attention import EAGER, attention_rows
from analysis.questions.question import Question, from_results
from analysis.records import FigureSpec
from analysis.questions.results_files import (ResultsAnswer, ResultsSet, Unanswered, ok_rows, plural, sorted_by_size,
                                              used_files)
from cs336_profile.contract import COMPILE

COMPILED = "compiled"
# A compiled/eager memory ratio within this of 1 counts as the same memory.
SAME_MEMORY = 0.05
# The time compile-b compares per mode: the forward pass alone, or the whole training step.
TIME_BY_MODE = {"forward": "forward_ms_mean", "forward-backward": "step_ms_mean", "train": "step_ms_mean"}


def side_by_side(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (head_dim, seq_len): eager and compiled times and memory, and the speedups."""
    keys = ["head_dim", "seq_len"]
    measures = ["status", "forward_ms_mean", "backward_ms_mean", "memory_before_backward_bytes"]
    eager = rows[rows["implementation"] == EAGER][keys + measures]
    compiled = rows[rows["implementation"] == COMPILED][keys + measures]
    both = eager.merge(compiled, on=keys, suffixes=("_eager", "_compiled"))
    table = both[keys].copy()
    table["status"] = both["status_eager"].where(both["status_eager"] != "ok", both["status_compiled"])
    for measure in measures[1:]:
        stem = measure.removesuffix("_mean").removesuffix("_bytes").removesuffix("_ms")
        unit = "bytes" if measure.endswith("_bytes") else "ms"
        table[f"{stem}_eager_{unit}"] = both[f"{measure}_eager"]
        table[f"{stem}_compiled_{unit}"] = both[f"{measure}_compiled"]
    for part in ("forward", "backward"):
        table[f"{part}_speedup"] = table[f"{part}_eager_ms"] / table[f"{part}_compiled_ms"]
    # A cell only one implementation completed shows the other's status, not a blank.
    table["eager_status"], table["compiled_status"] = both["status_eager"], both["status_compiled"]
    return table


def answer_compile_a(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """compile-a: the attention grid compiled and eager, side by side."""
    rows = attention_rows(results)
    if rows.empty or not {EAGER, COMPILED} <= set(rows["implementation"]):
        return Unanswered("compile-a", "an `attention` results file with eager and compiled rows "
                                       "(python -m cs336_profile.run attention)")
    table = side_by_side(rows)
    done = table[(table["eager_status"] == "ok") & (table["compiled_status"] == "ok")]
    text = "Compiled attention against eager over the grid:"
    for part in ("forward", "backward"):
        speedup = done[f"{part}_speedup"].dropna()
        if speedup.empty:
            continue
        median = speedup.median()
        verdict = f"{median:.2f}× faster" if median >= 1 else f"{1 / median:.2f}× slower"
        text += f" {part} {verdict} at the median ({speedup.min():.2f}–{speedup.max():.2f}×);"
    oom = {impl: int((table[f"{impl}_status"] == "OOM").sum()) for impl in (EAGER, COMPILED)}
    text = text.rstrip(";") + f". Out of memory: {oom[EAGER]} eager and {oom[COMPILED]} compiled configurations"
    memory = (done["memory_before_backward_compiled_bytes"] / done["memory_before_backward_eager_bytes"]).dropna()
    if not memory.empty:
        text += f"; compiled keeps {memory.median():.2f}× eager's memory before backward (median), " \
                + _memory_reason(memory.median())
    table = table.drop(columns=["eager_status", "compiled_status"])
    return ResultsAnswer("compile-a", text + ".", {"Eager and compiled attention": table},
                         used_files(rows[rows["implementation"].isin((EAGER, COMPILED))]))


def _memory_reason(compiled_over_eager: float) -> str:
    """What a compiled/eager ratio of the memory saved for backward says."""
    if abs(compiled_over_eager - 1) < SAME_MEMORY:
        return "about as much: compiling does not shrink what autograd saves for backward"
    if compiled_over_eager < 1:
        return "since the fused kernels save fewer seq × seq intermediates"
    return "more than eager: the compiled graph saves extra intermediates for backward"


def whole_model_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per size, context length and mode: eager and compiled time (forward, or the whole step)."""
    keys = ["size", "context_length", "mode", "dtype"]
    time_ms = pd.Series(float("nan"), index=rows.index)
    for mode, column in TIME_BY_MODE.items():
        time_ms = time_ms.mask(rows["mode"] == mode, rows[column])
    rows = rows.assign(time_ms=time_ms)
    eager = rows[~rows["compile"].astype(bool)][keys + ["status", "time_ms"]]
    compiled = rows[rows["compile"].astype(bool)][keys + ["status", "time_ms"]]
    both = eager.merge(compiled, on=keys, suffixes=("_eager", "_compiled"))
    table = both[keys].copy()
    table["timed"] = both["mode"].map(lambda m: "forward" if m == "forward" else "whole step")
    table["status"] = both["status_eager"].where(both["status_eager"] != "ok", both["status_compiled"])
    table["eager_ms"], table["compiled_ms"] = both["time_ms_eager"], both["time_ms_compiled"]
    table["speedup"] = table["eager_ms"] / table["compiled_ms"]
    return sorted_by_size(table, "context_length", "mode")


def answer_compile_b(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """compile-b: whole-model compiled against eager, forward and the full training step."""
    rows = results.experiment_rows(COMPILE)
    table = whole_model_table(rows) if not rows.empty else rows
    if table.empty or ok_rows(table)["speedup"].isna().all():
        return Unanswered("compile-b", "a `compile` results file (python -m cs336_profile.run compile)")
    parts = []
    for timed, group in ok_rows(table).groupby("timed", sort=False):
        speedup = group.groupby("size", sort=False)["speedup"].mean().dropna()  # over context lengths
        span = f"{speedup.iloc[0]:.2f}× for {speedup.index[0]}"
        if len(speedup) > 1:
            span += f" to {speedup.iloc[-1]:.2f}× for {speedup.index[-1]}"
        parts.append(f"{timed} {span}")
    device = rows["device"].iloc[0]
    contexts = sorted(table["context_length"].unique())
    measure = "speedup over eager" if len(contexts) == 1 else "mean speedup over eager across context lengths"
    text = f"torch.compile on the whole model ({device}, context {', '.join(str(c) for c in contexts)}), {measure}: " \
           + "; ".join(parts) + "."
    slower = ok_rows(table)[ok_rows(table)["speedup"] < 1]
    if not slower.empty:
        text += f" {len(slower)} of {plural(len(ok_rows(table)), 'configuration')} ran slower compiled."
    return ResultsAnswer("compile-b", text, {"Whole model, eager against compiled": table}, used_files(rows))


COMPILE_A = Question(
    id="compile-a", section="torch.compile", title="Compiled attention",
    text="The attention grid compiled, side by side with eager.",
    needs="an `attention` results file with eager and compiled rows (python -m cs336_profile.run attention)",
    compute=from_results(answer_compile_a), figure=FigureSpec("compile-a", alt="Compiled attention"),
)

COMPILE_B = Question(
    id="compile-b", section="torch.compile", title="Compiled model",
    text="The whole model compiled against eager: forward, and forward + backward + optimizer.",
    needs="a `compile` results file (python -m cs336_profile.run compile)",
    compute=from_results(answer_compile_b), figure=FigureSpec("compile-b", alt="Compiled model"),
)
