"""Memory: mem-a (allocated memory over a step), mem-b/mem-c (peak memory per context length,
fp32 and bf16), mem-d (one residual-stream activation) and mem-e (the largest allocations).

Reads the memory experiment's results: ``memory`` (one bench summary row per context length,
mode and dtype, with peak allocated bytes), ``memory_timeline`` (allocated bytes over the
recorded step), ``memory_activation`` and ``memory_largest_allocations``.
"""
from __future__ import annotations

import pandas as pd

from analysis.questions.question import Question, from_results
from analysis.records import FigureSpec
from analysis.questions.results_files import ResultsAnswer, ResultsSet, Unanswered, ok_rows, used_files
from cs336_profile.contract import GIB, MIB, PEAK_COLUMNS, SNAPSHOT_FOLDER, peak_column
from cs336_profile.contract import MEMORY as PEAKS
from cs336_profile.contract import MEMORY_ACTIVATION as ACTIVATION
from cs336_profile.contract import MEMORY_LARGEST_ALLOCATIONS as LARGEST
from cs336_profile.contract import MEMORY_TIMELINE as TIMELINE

RUN_MEMORY = "python -m cs336_profile.run memory on a CUDA device"
# The peaks the tables show: the loss peak sits between forward and backward and adds nothing.
SHOWN_PEAKS = tuple(column for column in PEAK_COLUMNS if column != peak_column("loss"))
# A bf16/fp32 peak ratio within this of 1 counts as no real change.
SMALL_CHANGE = 0.1


def answer_mem_a(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-a: allocated memory over the recorded step, forward only against a full training step."""
    rows = results.experiment_rows(TIMELINE)
    if rows.empty:
        return Unanswered("mem-a", f"a `{TIMELINE}` results file with allocator snapshots ({RUN_MEMORY})")
    grouped = rows.groupby(["snapshot", "mode", "context_length", "dtype"], sort=False)["allocated_bytes"]
    table = grouped.agg(start_bytes="first", peak_bytes="max", end_bytes="last").reset_index()
    table["snapshot_file"] = SNAPSHOT_FOLDER + "/" + table["snapshot"] + ".pickle"
    size = _size_of(results)
    parts = [f"{row.mode} peaks at {row.peak_bytes / GIB:.2f} GiB from {row.start_bytes / GIB:.2f} GiB "
             f"at the start of the step" for row in table.itertuples()]
    text = f"Allocated memory {size}at context {table['context_length'].iloc[0]} ({table['dtype'].iloc[0]}): " \
           + "; ".join(parts) + "."
    if {"forward", "train"} <= set(table["mode"]):
        peak = table.set_index("mode")["peak_bytes"]
        text += f" The training step needs {peak['train'] / peak['forward']:.1f}× the forward pass's peak: " \
                "activations kept for backward, gradients and AdamW's two moments come on top of the parameters."
    text += " Load a snapshot file at pytorch.org/memory_viz to see every allocation."
    return ResultsAnswer("mem-a", text, {"Recorded steps": table.drop(columns="snapshot"),
                                         "Allocated memory over the step": rows}, used_files(rows))


def _size_of(results: ResultsSet) -> str:
    """``of the 2.7B model `` from the peaks results; empty without them (the timeline has no size)."""
    rows = results.experiment_rows(PEAKS)
    return f"of the {rows['size'].iloc[0]} model " if not rows.empty else ""


def peak_table(rows: pd.DataFrame, dtype: str) -> pd.DataFrame:
    """Context lengths × modes of one dtype: the peak allocated bytes per phase and overall."""
    chosen = rows[rows["dtype"] == dtype].sort_values(["context_length", "mode"])
    return chosen[["size", "context_length", "mode", "dtype", "status",
                   *[c for c in SHOWN_PEAKS if c in chosen]]].reset_index(drop=True)


def _peak_sentence(table: pd.DataFrame) -> str:
    """``forward 1.2–3.4 GiB, train 5.6–7.8 GiB over contexts 128–512``."""
    parts = []
    for mode, rows in table.groupby("mode", sort=False):
        done = ok_rows(rows)
        if done.empty:
            parts.append(f"{mode} ran out of memory at every context length")
            continue
        low, high = done.iloc[0], done.iloc[-1]
        span = f"{low['peak_memory_bytes'] / GIB:.2f} GiB at context {low['context_length']}"
        if len(done) > 1:
            span += f" to {high['peak_memory_bytes'] / GIB:.2f} GiB at {high['context_length']}"
        oom = rows[rows["status"] != "ok"]
        if not oom.empty:
            span += f" (out of memory at {', '.join(str(c) for c in oom['context_length'])})"
        parts.append(f"{mode} peaks at {span}")
    return "; ".join(parts)


def answer_mem_b(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-b: peak memory per context length, forward only against a full training step (fp32)."""
    rows = results.experiment_rows(PEAKS)
    table = peak_table(rows, "fp32") if not rows.empty else rows
    if table.empty or ok_rows(table)["peak_memory_bytes"].isna().all():
        return Unanswered("mem-b", f"a `{PEAKS}` results file with fp32 peaks ({RUN_MEMORY})")
    text = f"{table['size'].iloc[0]} in fp32: {_peak_sentence(table)}."
    growth = _train_over_forward(table)
    if growth:
        text += f" A training step needs {growth} the forward pass's peak at the same context length."
    return ResultsAnswer("mem-b", text, {"Peak memory, fp32": table}, used_files(rows[rows["dtype"] == "fp32"]))


def _train_over_forward(table: pd.DataFrame) -> str:
    peaks = ok_rows(table).pivot_table(index="context_length", columns="mode", values="peak_memory_bytes")
    if not {"forward", "train"} <= set(peaks.columns):
        return ""
    ratio = (peaks["train"] / peaks["forward"]).dropna()
    if ratio.empty:
        return ""
    return f"{ratio.min():.1f}×" if len(ratio) == 1 or ratio.max() - ratio.min() < 0.05 else \
        f"{ratio.min():.1f}–{ratio.max():.1f}×"


def answer_mem_c(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-c: the same peaks under bf16 autocast, next to fp32."""
    rows = results.experiment_rows(PEAKS)
    bf16 = peak_table(rows, "bf16") if not rows.empty else rows
    if bf16.empty or ok_rows(bf16)["peak_memory_bytes"].isna().all():
        return Unanswered("mem-c", f"a `{PEAKS}` results file with bf16 peaks ({RUN_MEMORY})")
    keys = ["context_length", "mode"]
    both = peak_table(rows, "fp32")[[*keys, "status", "peak_memory_bytes"]].merge(
        bf16[[*keys, "status", "peak_memory_bytes"]], on=keys, suffixes=("_fp32", "_bf16"))
    compared = pd.DataFrame({
        "context_length": both["context_length"], "mode": both["mode"],
        "status": both["status_fp32"].where(both["status_fp32"] != "ok", both["status_bf16"]),
        "fp32_peak_bytes": both["peak_memory_bytes_fp32"], "bf16_peak_bytes": both["peak_memory_bytes_bf16"],
        "bf16_over_fp32_ratio": both["peak_memory_bytes_bf16"] / both["peak_memory_bytes_fp32"],
    })
    text = f"{bf16['size'].iloc[0]} under bf16 autocast: {_peak_sentence(bf16)}."
    ratios = {mode: group.dropna() for mode, group in compared.groupby("mode", sort=False)["bf16_over_fp32_ratio"]}
    ratios = {mode: ratio for mode, ratio in ratios.items() if not ratio.empty}
    effects = {mode: _precision_effect(ratio) for mode, ratio in ratios.items()}
    if len(set(effects.values())) == 1:
        text += f" Against fp32 the peak is {_ratio_span(pd.concat(ratios.values()))} as large: " \
                + "{}: {}.".format(*next(iter(effects.values())))
    elif effects:
        text += " Against fp32 the peak is " + " and ".join(
            f"{_ratio_span(ratios[mode])} as large in {mode} ({effect}: {reason})"
            for mode, (effect, reason) in effects.items()) + "."
    return ResultsAnswer("mem-c", text, {"Peak memory, bf16 autocast": bf16, "bf16 against fp32": compared},
                         used_files(rows))


def _ratio_span(ratio: pd.Series) -> str:
    low, high = f"{ratio.min():.2f}", f"{ratio.max():.2f}"
    return f"{low}×" if low == high else f"{low}–{high}×"


def _precision_effect(ratio: pd.Series) -> tuple[str, str]:
    """What bf16/fp32 peak ratios say about mixed precision and memory: the effect, and why."""
    if (ratio - 1).abs().max() < SMALL_CHANGE:
        return ("mixed precision barely changes peak memory",
                "parameters, gradients and optimizer state stay fp32, and autocast keeps bf16 copies next to the "
                "fp32 tensors")
    if ratio.max() < 1:
        return "mixed precision lowers peak memory", "activations saved for backward are bf16, half the bytes"
    return "mixed precision raises peak memory here", "autocast's bf16 copies of the weights come on top of the fp32 ones"


def answer_mem_d(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-d: size of one residual-stream activation tensor in fp32, with its derivation."""
    rows = results.experiment_rows(ACTIVATION)
    if rows.empty:
        return Unanswered("mem-d", f"a `{ACTIVATION}` results file (python -m cs336_profile.run memory)")
    first = rows.iloc[0]
    text = f"One residual-stream activation of {first['size']} (batch × context × d_model fp32 values) is " \
           + "; ".join(f"{r.mib:.2f} MB at context {r.context_length}" for r in rows.itertuples()) \
           + f": {first['derivation']}."
    return ResultsAnswer("mem-d", text, {"Residual-stream activation, fp32": rows[
        ["size", "batch_size", "context_length", "d_model", "bytes", "mib", "derivation"]].rename(
        columns={"bytes": "activation_bytes_exact", "mib": "activation_mib"})}, used_files(rows))


def answer_mem_e(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-e: the largest allocations of the forward pass and the model code that made them."""
    rows = results.experiment_rows(LARGEST)
    if rows.empty:
        return Unanswered("mem-e", f"a `{LARGEST}` results file from an allocator snapshot ({RUN_MEMORY})")
    table = rows.sort_values(["size_bytes", "count"], ascending=False)[
        ["size_bytes", "count", "site", "stack", "snapshot"]].reset_index(drop=True)
    # Stacks differ below the model code; the answer speaks of sizes and the sites that made them.
    by_site = table.groupby(["size_bytes", "site"], sort=False)["count"].sum().reset_index() \
        .sort_values(["size_bytes", "count"], ascending=False, kind="stable")
    top_size = by_site["size_bytes"].iloc[0]
    top = by_site[by_site["size_bytes"] == top_size]
    text = f"The largest allocations of the forward pass are {top_size / MIB:,.1f} MiB each " \
           f"({int(top['count'].sum())} of them), made at "
    text += top["site"].iloc[0] if len(top) == 1 else \
        " and ".join(f"{r.site} ({int(r.count)})" for r in top.itertuples())
    others = by_site[by_site["size_bytes"] < top_size].head(2)
    if not others.empty:
        text += "; next come " + " and ".join(f"{r.size_bytes / MIB:,.1f} MiB at {r.site}" for r in others.itertuples())
    text += "."
    return ResultsAnswer("mem-e", text, {"Largest allocations of the forward pass": table}, used_files(rows))


MEM_A = Question(
    id="mem-a", section="Memory", title="Memory over a step",
    text="Allocated memory over a forward pass and over a full training step.",
    needs=f"a `{TIMELINE}` results file with allocator snapshots ({RUN_MEMORY})",
    compute=from_results(answer_mem_a), figure=FigureSpec("mem-a", alt="Memory over a step"),
)

MEM_B = Question(
    id="mem-b", section="Memory", title="Peak memory per context length",
    text="Peak memory per context length: forward only against a full training step.",
    needs=f"a `{PEAKS}` results file with fp32 peaks ({RUN_MEMORY})",
    compute=from_results(answer_mem_b), figure=FigureSpec("mem-b", alt="Peak memory per context length"),
)

MEM_C = Question(
    id="mem-c", section="Memory", title="Peak memory with bf16 autocast",
    text="The same peaks under bf16 autocast: does mixed precision change peak memory much?",
    needs=f"a `{PEAKS}` results file with bf16 peaks ({RUN_MEMORY})",
    compute=from_results(answer_mem_c), figure=FigureSpec("mem-c", alt="Peak memory with bf16 autocast"),
)

MEM_D = Question(
    id="mem-d", section="Memory", title="One residual-stream activation",
    text="Size of one residual-stream activation tensor in fp32, in MB, and its derivation.",
    needs=f"a `{ACTIVATION}` results file (python -m cs336_profile.run memory)",
    compute=from_results(answer_mem_d), figure=FigureSpec("mem-d", alt="One residual-stream activation"),
)

MEM_E = Question(
    id="mem-e", section="Memory", title="Largest allocations",
    text="The largest allocations of the forward pass and where they come from.",
    needs=f"a `{LARGEST}` results file from an allocator snapshot ({RUN_MEMORY})",
    compute=from_results(answer_mem_e), figure=FigureSpec("mem-e", alt="Largest allocations"),
)
