"""Benchmarking without a profiler: bench-b (mean ± std of forward and backward per size) and
bench-c (the same without warm-up and with 1–2 warm-up steps).

Reads the ``bench`` results (one summary row per configuration) and, for bench-c, the
``bench_steps`` results (one row per step) to show what the first measured step costs.
"""
from __future__ import annotations

import pandas as pd

from analysis.questions.question import Question, from_results
from analysis.records import FigureSpec
from analysis.questions.results_files import (ResultsAnswer, ResultsSet, Unanswered, ok_rows, plural, sorted_by_size,
                                              used_files)
from cs336_profile.contract import BENCH, BENCH_STEPS

# A standard deviation under this share of the mean counts as a small spread.
SMALL_SPREAD = 0.05
# A first measured step this many times slower than the later ones shows a one-off cost.
FIRST_STEP_SLOW = 1.5
# Keys that identify one configuration apart from its warm-up steps.
CONFIG_KEYS = ("size", "context_length", "batch_size", "mode", "dtype", "compile", "attention", "device",
               "measured_steps", "nvtx_annotations")
TIMED = ("forward", "backward")
FIRST_STEP_TITLE = "First measured step against the later ones"
ONE_OFF_COSTS = {
    "cuda": "creating the CUDA context and cuBLAS handles, growing the caching allocator and choosing GEMM kernels",
    "cpu": "growing the allocator and the first dispatch of each operator",
}


def _timed_columns(rows: pd.DataFrame) -> list[str]:
    return [f"{part}_ms_{stat}" for part in TIMED for stat in ("mean", "std") if f"{part}_ms_mean" in rows]


def _plain_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """fp32, eager rows: the configurations the benchmarking questions are about."""
    if rows.empty:
        return rows
    return rows[(rows["dtype"] == "fp32") & ~rows["compile"].astype(bool)]


def answer_bench_b(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """bench-b: forward and backward mean ± std per size and context length; is the spread small?"""
    rows = _plain_runs(results.experiment_rows(BENCH))
    if not rows.empty:
        rows = rows[rows["warmup_steps"] > 0]
    if rows.empty or ok_rows(rows).empty:
        return Unanswered("bench-b", "a `bench` results file with warm-up steps (python -m cs336_profile.run bench)")
    table = sorted_by_size(rows, "context_length", "mode", "warmup_steps")
    table = table[["size", "context_length", "mode", "warmup_steps", "measured_steps", "status", *_timed_columns(table)]]
    for part in TIMED:
        if f"{part}_ms_mean" in table:
            table[f"{part}_std_over_mean_share"] = table[f"{part}_ms_std"] / table[f"{part}_ms_mean"]
    done = ok_rows(table)
    sentences = [f"Over {plural(len(done), 'configuration')} ({_range_text(done)}), each timed over "
                 f"{_values_text(done['measured_steps'])} measured steps after "
                 f"{_values_text(done['warmup_steps'])} warm-up steps,"]
    spreads = []
    for part in TIMED:
        share = done.get(f"{part}_std_over_mean_share")
        if share is None or share.isna().all():
            continue
        worst = done.loc[share.idxmax()]
        spreads.append(share.max())
        sentences.append(f"the {part} pass's standard deviation is at most {share.max():.1%} of its mean "
                         f"({worst['size']}, context {worst['context_length']}; median {share.median():.1%})")
    if not spreads:
        return Unanswered("bench-b", "a `bench` results file with at least two measured steps (a standard deviation)")
    verdict = "small" if max(spreads) < SMALL_SPREAD else "not small"
    text = sentences[0] + " " + " and ".join(sentences[1:]) + f": the spread is {verdict}."
    if len(done) < len(table):
        text += f" {plural(len(table) - len(done), 'configuration')} ran out of memory."
    return ResultsAnswer("bench-b", text, {"Forward and backward time per configuration": table}, used_files(rows))


def _range_text(rows: pd.DataFrame) -> str:
    sizes = list(dict.fromkeys(rows["size"]))
    contexts = sorted(rows["context_length"].unique())
    return f"sizes {', '.join(sizes)}; context lengths {', '.join(str(c) for c in contexts)}"


def _values_text(values: pd.Series) -> str:
    distinct = sorted(values.unique())
    return str(distinct[0]) if len(distinct) == 1 else f"{distinct[0]}–{distinct[-1]}"


def first_step_table(steps: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and warm-up count: the first measured step's time and the later steps' mean."""
    measured = steps[steps["step_kind"] == "measured"]
    keys = [*CONFIG_KEYS, "warmup_steps"]
    first = measured[measured["step_index"] == 0].groupby(keys)["step_ms"].mean().rename("first_step_ms")
    later = measured[measured["step_index"] > 0].groupby(keys)["step_ms"].mean().rename("later_steps_ms")
    table = pd.concat([first, later], axis=1).reset_index()
    table["first_over_later_ratio"] = table["first_step_ms"] / table["later_steps_ms"]
    return table


def answer_bench_c(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """bench-c: the same configurations with 0, 1, 2… warm-up steps; how and why they differ."""
    needs = "`bench` results of the same configurations with different warm-up counts " \
            "(python -m cs336_profile.run bench --warmup 0 --name bench_warmup0, then --warmup 1, then the default 2)"
    rows = ok_rows(_plain_runs(results.experiment_rows(BENCH)))
    if rows.empty:
        return Unanswered("bench-c", needs)
    warmups = rows.groupby(list(CONFIG_KEYS), dropna=False)["warmup_steps"]
    rows = rows[(warmups.transform("nunique") > 1) & (warmups.transform("min") == 0)]
    if rows.empty:
        return Unanswered("bench-c", needs)
    table = sorted_by_size(rows, "context_length", "mode", "warmup_steps")
    table = table[["size", "context_length", "mode", "device", "warmup_steps", *_timed_columns(table), "step_ms_mean",
                   "step_ms_std"]]
    steps = results.experiment_rows(BENCH_STEPS)
    tables = {"Mean ± std by number of warm-up steps": table}
    inputs = used_files(rows)
    if not steps.empty:
        first = first_step_table(_plain_runs(steps)).merge(table[["size", "context_length", "mode", "warmup_steps"]])
        first = sorted_by_size(first, "context_length", "mode", "warmup_steps")
        tables[FIRST_STEP_TITLE] = first[
            ["size", "context_length", "mode", "warmup_steps", "first_step_ms", "later_steps_ms", "first_over_later_ratio"]]
        inputs += used_files(steps)
    return ResultsAnswer("bench-c", _bench_c_text(table, tables), tables, tuple(sorted(set(inputs))))


def _bench_c_text(table: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> str:
    """Compare step times without warm-up against the most warmed-up run of one configuration: the one
    whose first measured step without warm-up is slowest against its later steps (the largest
    configuration when there are no per-step rows), then the first-step ratio of the others."""
    first = tables.get(FIRST_STEP_TITLE)
    cold_first = pd.DataFrame() if first is None else \
        first[first["warmup_steps"] == 0].dropna(subset=["first_over_later_ratio"])
    chosen = table.iloc[-1] if cold_first.empty else cold_first.loc[cold_first["first_over_later_ratio"].idxmax()]
    same = table[(table["size"] == chosen["size"]) & (table["context_length"] == chosen["context_length"])
                 & (table["mode"] == chosen["mode"])]
    cold, warm = same.iloc[0], same.iloc[-1]
    label = f"{chosen['size']} at context {chosen['context_length']} ({chosen['mode']})"
    text = (f"For {label}, a step averages {cold['step_ms_mean']:.2f} ± {cold['step_ms_std']:.2f} ms without "
            f"warm-up against {warm['step_ms_mean']:.2f} ± {warm['step_ms_std']:.2f} ms after "
            f"{warm['warmup_steps']} warm-up steps ({cold['step_ms_mean'] / warm['step_ms_mean']:.2f}× the time, "
            f"{_std_change(cold['step_ms_std'], warm['step_ms_std'])}).")
    if cold_first.empty:
        return text
    ratio = chosen["first_over_later_ratio"]
    text += f" Without warm-up the first step alone takes {ratio:.1f}× the later steps"
    if ratio > FIRST_STEP_SLOW:
        text += f": it pays one-off costs ({ONE_OFF_COSTS.get(cold['device'], ONE_OFF_COSTS['cpu'])})" \
                ", which warm-up steps take out of the measurement."
    else:
        text += ", so this device has little to warm up."
    others = cold_first.drop(index=chosen.name)["first_over_later_ratio"]
    if not others.empty:
        low, high = f"{others.min():.1f}", f"{others.max():.1f}"
        others_text = "the other configuration" if len(others) == 1 else f"the other {len(others)} configurations"
        text += f" In {others_text} the first step takes " \
                f"{low if low == high else f'{low}–{high}'}× the later ones."
    return text


def _std_change(cold_std: float, warm_std: float) -> str:
    if pd.isna(cold_std) or pd.isna(warm_std) or warm_std == 0:
        return "spread not comparable"
    return f"a standard deviation {cold_std / warm_std:.1f}× as large"


BENCH_B = Question(
    id="bench-b", section="Benchmarking", title="Forward and backward times",
    text="Forward and backward times (mean ± std) for every size: is the spread small?",
    needs="a `bench` results file (python -m cs336_profile.run bench)",
    compute=from_results(answer_bench_b), figure=FigureSpec("bench-b", alt="Forward and backward times"),
)

BENCH_C = Question(
    id="bench-c", section="Benchmarking", title="Warm-up steps",
    text="The same without warm-up and with 1–2 warm-up steps: how and why do results differ?",
    needs="`bench` results with 0, 1 and 2 warm-up steps (python -m cs336_profile.run bench --warmup N)",
    compute=from_results(answer_bench_c), figure=FigureSpec("bench-c", alt="Warm-up steps"),
)
