"""torch.compile: compile-a (compiled attention next to eager over the attention grid) and
compile-b (the whole model compiled against eager: forward, and forward + backward + optimizer).

Reads the ``attention`` results (implementations ``eager`` and ``compiled``) and the ``compile``
results (bench rows of each size and mode, eager and compiled).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.questions.attention import EAGER, attention_rows
from analysis.questions.question import Evidence, Question, from_results
from analysis.questions.records import FigureSpec
from analysis.questions.shared import run_spread, story
from analysis.questions.shared.results_files import ResultsAnswer, ResultsSet, Unanswered, ok_rows, plural, sorted_by_size, used_files
from analysis.questions.shared.trace_pairs import phase_pairs
from cs336_profile.contract import COMPILE, MIB

if TYPE_CHECKING:
    import pandas as pd

COMPILED = "compiled"
# An eager forward shorter than this is mostly kernel launches (the grid's short sequences take
# 0.2–0.4 ms whatever their size): speedups there compare launch paths, not kernels.
KERNEL_BOUND_MS = 1.0
# A compiled/eager memory ratio within this of 1 counts as the same memory.
SAME_MEMORY = 0.05
# The time compile-b compares per mode: the forward pass alone, or the whole training step.
TIME_BY_MODE = {"forward": "forward_ms_mean", "forward-backward": "step_ms_mean", "train": "step_ms_mean"}


def side_by_side(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (head_dim, seq_len): eager and compiled times and memory, and the speedups."""
    keys = ["head_dim", "seq_len"]
    measures = ["status", "forward_ms_mean", "backward_ms_mean", "memory_before_backward_bytes", "peak_memory_bytes"]
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
    table["peak_compiled_over_eager"] = table["peak_memory_compiled_bytes"] / table["peak_memory_eager_bytes"]
    # A cell only one implementation completed shows the other's status, not a blank.
    table["eager_status"], table["compiled_status"] = both["status_eager"], both["status_compiled"]
    return table


def answer_compile_a(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """compile-a: the attention grid compiled and eager, side by side: speedups where the passes
    are long enough to time kernels, peak memory, memory saved for backward."""
    rows = attention_rows(results)
    if rows.empty or not {EAGER, COMPILED} <= set(rows["implementation"]):
        return Unanswered("compile-a", "an `attention` results file with eager and compiled rows "
                                       "(python -m cs336_profile.run attention)")
    table = side_by_side(rows)
    done = table[(table["eager_status"] == "ok") & (table["compiled_status"] == "ok")]
    long = done[done["forward_eager_ms"] >= KERNEL_BOUND_MS]
    short = done[done["forward_eager_ms"] < KERNEL_BOUND_MS]
    numbers: dict = {}
    text = "Compiled attention against eager"
    if not long.empty:
        text += f", where eager's forward takes at least {KERNEL_BOUND_MS:g} ms (T ≥ {long['seq_len'].min()}):"
        for part in ("forward", "backward"):
            speedup = long[f"{part}_speedup"].dropna()
            numbers[f"{part}_speedup_min"], numbers[f"{part}_speedup_max"] = speedup.min(), speedup.max()
            text += f" {part} {_ratio_span(speedup)};"
        text = text.rstrip(";") + "."
    if not short.empty:
        text += (f" Shorter passes ({short['forward_eager_ms'].min():.2f}–{short['forward_eager_ms'].max():.2f} ms "
                 f"eager, T ≤ {short['seq_len'].max()}) are mostly kernel launches: their forward ratios "
                 f"({short['forward_speedup'].min():.2f}–{short['forward_speedup'].max():.2f}×) compare launch paths.")
    peak = done.dropna(subset=["peak_compiled_over_eager"])
    if not peak.empty:
        top = peak.sort_values(["seq_len", "head_dim"]).iloc[-1]
        numbers.update(peak_ratio_at_largest=top["peak_compiled_over_eager"])
        text += (f" At the largest configuration (d={top['head_dim']}, T={top['seq_len']}) the peak is "
                 f"{top['peak_memory_compiled_bytes'] / MIB:,.0f} MiB compiled against "
                 f"{top['peak_memory_eager_bytes'] / MIB:,.0f} MiB eager ({top['peak_compiled_over_eager']:.2f}×): "
                 + ("the fused softmax leaves fewer T² temporaries alive at once."
                    if top["peak_compiled_over_eager"] < 1 - SAME_MEMORY else "about the same."))
    oom = {impl: int((table[f"{impl}_status"] == "OOM").sum()) for impl in (EAGER, COMPILED)}
    if any(oom.values()):
        text += f" Out of memory: {oom[EAGER]} eager and {oom[COMPILED]} compiled configurations."
    memory = (done["memory_before_backward_compiled_bytes"] / done["memory_before_backward_eager_bytes"]).dropna()
    if not memory.empty:
        numbers["saved_ratio_median"] = memory.median()
        text += f" What is kept for backward: compiled {memory.median():.2f}× eager (median), " \
                + _memory_reason(memory.median()) + "."
    table = table.drop(columns=["eager_status", "compiled_status"])
    return ResultsAnswer("compile-a", text, {"Eager and compiled attention": table},
                         used_files(rows[rows["implementation"].isin((EAGER, COMPILED))]), numbers)


def _ratio_span(speedup: pd.Series) -> str:
    """``1.7–2.5× faster`` / ``1.2× slower`` / ``0.9–1.3× (eager time over compiled)``."""
    low, high = speedup.min(), speedup.max()

    def span(a: float, b: float) -> str:
        return f"{a:.2f}×" if f"{a:.2f}" == f"{b:.2f}" else f"{a:.2f}–{b:.2f}×"
    if low >= 1:
        return f"{span(low, high)} faster"
    if high < 1:
        return f"{span(1 / high, 1 / low)} slower"
    return f"{span(low, high)} (eager time over compiled)"


def _memory_reason(compiled_over_eager: float) -> str:
    """What a compiled/eager ratio of the memory saved for backward says."""
    if abs(compiled_over_eager - 1) < SAME_MEMORY:
        return "about as much: compiling does not shrink what autograd saves for backward"
    if compiled_over_eager < 1:
        return "since the fused kernels save fewer seq × seq intermediates"
    return "more than eager: the compiled graph saves extra intermediates for backward"


def whole_model_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per size, context length and mode: eager and compiled time (forward, or the whole step)."""
    import pandas as pd

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


PHASE_PARTS = ("forward", "backward", "optimizer_step")


def phase_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per size, context length and mode: each phase's eager and compiled mean and std (ms), its
    speedup, and the peak memory of both with their ratio."""
    keys = ["size", "context_length", "mode", "dtype"]
    rows = rows.reindex(columns=list(dict.fromkeys([*rows.columns, "peak_memory_bytes",
                                                    *[f"{part}_ms_std" for part in PHASE_PARTS]])))
    measures = ["status", "peak_memory_bytes",
                *[f"{part}_ms_{stat}" for part in PHASE_PARTS for stat in ("mean", "std") if f"{part}_ms_mean" in rows]]
    both = rows[~rows["compile"].astype(bool)][keys + measures].merge(
        rows[rows["compile"].astype(bool)][keys + measures], on=keys, suffixes=("_eager", "_compiled"))
    table = both[keys].copy()
    table["status"] = both["status_eager"].where(both["status_eager"] != "ok", both["status_compiled"])
    for part in PHASE_PARTS:
        if f"{part}_ms_mean_eager" not in both:
            continue
        for impl in ("eager", "compiled"):
            table[f"{part}_{impl}_ms"] = both[f"{part}_ms_mean_{impl}"]
            table[f"{part}_{impl}_std_ms"] = both[f"{part}_ms_std_{impl}"]
        table[f"{part}_speedup"] = table[f"{part}_eager_ms"] / table[f"{part}_compiled_ms"]
    table["peak_eager_bytes"], table["peak_compiled_bytes"] = both["peak_memory_bytes_eager"], both["peak_memory_bytes_compiled"]
    table["peak_compiled_over_eager"] = table["peak_compiled_bytes"] / table["peak_eager_bytes"]
    return sorted_by_size(table, "context_length", "mode")


def _phases_text(phases: pd.DataFrame, spread: pd.DataFrame, numbers: dict) -> str:
    """Forward against backward + optimizer in the training step, per size; peak memory; a phase
    compile does not touch (the optimizer) judged against the spread between runs of the size."""
    import numpy as np
    import pandas as pd

    train = ok_rows(phases[phases["mode"] != "forward"]).dropna(subset=["backward_speedup"])
    if train.empty:
        return ""
    text = " In the training step:"
    for _, row in train.iterrows():
        text += (f" {row['size']} forward {row['forward_eager_ms']:.1f} → {row['forward_compiled_ms']:.1f} ms "
                 f"({row['forward_speedup']:.2f}×), backward {row['backward_eager_ms']:.1f} → "
                 f"{row['backward_compiled_ms']:.1f} ms ({row['backward_speedup']:.2f}×)")
        if pd.notna(row.get("optimizer_step_speedup")):
            text += (f", optimizer step {row['optimizer_step_eager_ms']:.1f} → {row['optimizer_step_compiled_ms']:.1f} ms "
                     f"({row['optimizer_step_speedup']:.2f}×)")
        text += ";"
    numbers.update(train_forward_speedup=train.set_index("size")["forward_speedup"].to_dict(),
                   train_backward_speedup=train.set_index("size")["backward_speedup"].to_dict())
    text = text.rstrip(";") + "."
    if "optimizer_step_speedup" in train:
        text += (" Only the model is compiled (torch.compile(model)); AdamW's step runs as before, so its change is "
                 "not a compile effect")
        wide = [f"{row['size']} (up to {ratio:.2f}×)" for _, row in train.iterrows()
                if (ratio := _widest_spread(spread, row["size"])) and abs(np.log(row["optimizer_step_speedup"])) < np.log(ratio)]
        text += (f": it lies within the spread between runs of one configuration measured for {', '.join(wide)}."
                 if wide else ".")
    peaks = ok_rows(phases).dropna(subset=["peak_compiled_over_eager"])
    if not peaks.empty:
        numbers.update(peak_ratio_min=peaks["peak_compiled_over_eager"].min(),
                       peak_ratio_max=peaks["peak_compiled_over_eager"].max())
        text += (f" Peak memory compiled is {peaks['peak_compiled_over_eager'].min():.2f}–"
                 f"{peaks['peak_compiled_over_eager'].max():.2f}× eager's ("
                 + ", ".join(f"{r['size']} {r['mode']} {r['peak_eager_bytes'] / MIB:,.0f} → "
                             f"{r['peak_compiled_bytes'] / MIB:,.0f} MiB" for _, r in peaks.iterrows()) + ").")
    return text


def _widest_spread(spread: pd.DataFrame, size: str) -> float | None:
    """The largest between-runs ratio of any part of any fp32 eager configuration of ``size``."""
    import pandas as pd

    rows = spread[spread["size"] == size] if not spread.empty else spread
    ratios = [rows[c].max() for c in rows if c.endswith("_between_runs_ratio")] if not rows.empty else []
    ratios = [r for r in ratios if pd.notna(r)]
    return max(ratios) if ratios else None


def _compile_side(config: dict) -> str | None:
    """eager or compiled for a one-GPU fp32, naive-attention trace; None for any other."""
    if config.get("dtype", "fp32") != "fp32" or (config.get("attention") or "naive") != "naive" or config.get("parallel"):
        return None
    return COMPILED if config.get("compile") else EAGER


def _trace_text(pairs: pd.DataFrame, numbers: dict) -> str:
    """What compiling changes in a traced forward: kernels launched, kernel time, GEMM time."""
    row = pairs.iloc[-1]
    numbers.update(traced_kernels_eager=row[f"kernels_per_pass_{EAGER}"],
                   traced_kernels_compiled=row[f"kernels_per_pass_{COMPILED}"])
    return (f" In the traces of {row['size']} ctx{row['context_length']} {row['mode']}, the compiled forward launches "
            f"{row[f'kernels_per_pass_{COMPILED}']:,.0f} kernels per pass against {row[f'kernels_per_pass_{EAGER}']:,.0f}"
            f" eager (kernel time {row[f'kernel_ms_{EAGER}']:.2f} → {row[f'kernel_ms_{COMPILED}']:.2f} ms) while its "
            f"GEMMs take {row[f'gemm_ms_{EAGER}']:.2f} → {row[f'gemm_ms_{COMPILED}']:.2f} ms: compiling fuses the "
            "elementwise kernels around the matmuls and leaves the matmuls to the same library calls.")


def _coverage_text(done: pd.DataFrame, summaries: list[dict]) -> str:
    """Which sizes the speedup holds for: how idle the GPU is in the eager traces of the measured
    sizes and context lengths (launch-bound work gains most from fusing kernels), and the traced
    sizes not measured."""
    measured = list(dict.fromkeys(done["size"]))
    eager = [s for s in summaries if _compile_side(s.get("config") or {}) == EAGER]
    contexts = set(done["context_length"])
    idle = story.launch_bound([s for s in eager if s["config"].get("size") in measured
                               and s["config"].get("context_length") in contexts])
    unmeasured = [size for size in dict.fromkeys(s["config"].get("size") for s in eager) if size not in measured]
    if idle.empty and not unmeasured:
        return ""
    text = f" It holds for {' and '.join(measured)} only"
    if not idle.empty:
        text += (f", whose eager forward leaves the GPU idle {idle['idle_share'].min() * 100:.0f}–"
                 f"{idle['idle_share'].max() * 100:.0f}% of its span in the traces: launch-bound work, where fusing "
                 "kernels saves launches as much as GPU time")
    if unmeasured:
        text += f"; {', '.join(unmeasured)} were not compiled, so it does not carry over to them"
    return text + "."


def answer_compile_b(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """compile-b: whole-model compiled against eager, forward and the full training step, each
    phase and peak memory; the traced forward pair when there is one."""
    import pandas as pd

    results = evidence.results
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
    text += _coverage_text(ok_rows(table), evidence.summaries)
    slower = ok_rows(table)[ok_rows(table)["speedup"] < 1]
    if not slower.empty:
        text += f" {len(slower)} of {plural(len(ok_rows(table)), 'configuration')} ran slower compiled."
    tables = {"Whole model, eager against compiled": table}
    numbers: dict = {}
    phases = phase_table(rows)
    if not phases.empty:
        tables["Each phase and peak memory, eager against compiled"] = phases
        runs = run_spread.per_run(results)
        spread = run_spread.by_configuration(runs[(runs["dtype"] == "fp32") & ~runs["compile"].astype(bool)]) \
            if not runs.empty else pd.DataFrame()
        text += _phases_text(phases, spread, numbers)
    pairs = phase_pairs(evidence.summaries, _compile_side, (EAGER, COMPILED))
    if not pairs.empty:
        tables["Forward pass in the eager and compiled traces"] = pairs
        text += _trace_text(pairs, numbers)
    return ResultsAnswer("compile-b", text, tables, used_files(rows), numbers)


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
    compute=answer_compile_b, figure=FigureSpec("compile-b", alt="Compiled model"),
)
