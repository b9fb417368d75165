"""Mixed precision: mp-accum (the four accumulation loops), mp-a (the ToyModel's dtypes under
autocast) and mp-c (forward/backward with and without bf16 autocast, per size).

Reads the ``mixed_precision_accumulation`` and ``mixed_precision_toy_model`` results, and the
``bench`` results for mp-c (fp32 and bf16 rows of otherwise equal configurations).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.questions.bench import BENCH, CONFIG_KEYS, TIMED
from analysis.questions.question import Question, from_results
from analysis.records import FigureSpec
from analysis.questions.results_files import (ResultsAnswer, ResultsSet, Unanswered, ok_rows, plural, size_order,
                                              sorted_by_size, used_files)
from cs336_profile.contract import ADDEND, ADDITIONS
from cs336_profile.contract import MIXED_PRECISION_ACCUMULATION as ACCUMULATION
from cs336_profile.contract import MIXED_PRECISION_TOY_MODEL as TOY_MODEL

RUN_MIXED_PRECISION = "python -m cs336_profile.run mixed-precision"
FULL_PRECISION = "float32"


def answer_mp_accum(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mp-accum: each loop's printed result and its error against the exact 10.0."""
    rows = results.experiment_rows(ACCUMULATION)
    if rows.empty:
        return Unanswered("mp-accum", f"a `{ACCUMULATION}` results file ({RUN_MIXED_PRECISION})")
    table = rows[["loop", "accumulator_dtype", "value_dtype", "upcast", "device", "printed", "abs_error"]]
    sentences = []
    reference = rows[(rows["accumulator_dtype"] == FULL_PRECISION) & (rows["value_dtype"] == FULL_PRECISION)]
    ref_error = reference["abs_error"].iloc[0] if not reference.empty else None
    if ref_error is not None:
        sentences.append(f"Adding 0.01 a thousand times (exactly 10.0) all in fp32 prints {reference['printed'].iloc[0]} "
                         f"(error {ref_error:.3g}).")
    low = rows[rows["accumulator_dtype"] != FULL_PRECISION]
    if not low.empty:
        sentences.append("A low-precision accumulator drifts: " + "; ".join(
            f"{r.accumulator_dtype} prints {r.printed} (error {r.abs_error:.3g}"
            + (f", {r.abs_error / ref_error:,.0f}× the fp32 error)" if ref_error else ")")
            for r in low.itertuples()) + ".")
    mixed = rows[(rows["accumulator_dtype"] == FULL_PRECISION) & (rows["value_dtype"] == "float16")]
    if not mixed.empty and mixed["result"].nunique() == 1:
        rounded_addend = float(np.float16(ADDEND))
        result = mixed["result"].iloc[0]
        sentences.append(
            f"An fp32 sum of fp16 values prints {mixed['printed'].iloc[0]} with or without the explicit upcast"
            + (f": exactly 1000 × {rounded_addend!r}, the fp16 rounding of 0.01, so the error is in the addend, "
               "not in the sum." if abs(result - rounded_addend * ADDITIONS) < 1e-9 else "."))
    return ResultsAnswer("mp-accum", " ".join(sentences), {"Accumulation loops (exact sum 10.0)": table},
                         used_files(rows))


def dtype_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Quantity rows × one column per autocast dtype, in the order the model computes them."""
    table = rows.pivot_table(index="quantity", columns="autocast_dtype", values="dtype", aggfunc="first", sort=False)
    table.columns = [f"under {dtype} autocast" for dtype in table.columns]
    return table.reset_index()


def _dtype_groups(rows: pd.DataFrame) -> str:
    """``float32 for a, b; float16 for c`` for the rows of one autocast dtype."""
    groups = rows.groupby("dtype", sort=False)["quantity"].apply(lambda q: ", ".join(q))
    return "; ".join(f"{dtype} for {quantities}" for dtype, quantities in groups.items())


def answer_mp_a(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mp-a: the dtype of each quantity of the ToyModel, as observed under fp16 and bf16 autocast."""
    rows = results.experiment_rows(TOY_MODEL)
    if rows.empty:
        return Unanswered("mp-a", f"a `{TOY_MODEL}` results file ({RUN_MIXED_PRECISION})")
    autocasts = list(dict.fromkeys(rows["autocast_dtype"]))
    first = rows[rows["autocast_dtype"] == autocasts[0]]
    text = f"Observed on {first['device'].iloc[0]}: under {autocasts[0]} autocast the model computes " \
           f"{_dtype_groups(first)}."
    for other in autocasts[1:]:
        others = rows[rows["autocast_dtype"] == other]
        same_pattern = (others["dtype"].replace(other, autocasts[0]).to_numpy() == first["dtype"].to_numpy()).all() \
            if len(others) == len(first) else False
        text += f" Under {other} autocast the pattern is the same with {other} in place of {autocasts[0]}." \
            if same_pattern else f" Under {other} autocast: {_dtype_groups(others)}."
    return ResultsAnswer("mp-a", text, {"dtypes observed in the ToyModel": dtype_table(rows)}, used_files(rows))


def precision_pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """fp32 and bf16 rows of the same configuration side by side, with the bf16 speedup per part."""
    keys = [key for key in CONFIG_KEYS if key != "dtype"] + ["warmup_steps"]
    columns = [f"{part}_ms_mean" for part in TIMED if f"{part}_ms_mean" in rows]
    fp32 = rows[rows["dtype"] == "fp32"][keys + ["status", *columns]]
    bf16 = rows[rows["dtype"] == "bf16"][keys + ["status", *columns]]
    pairs = fp32.merge(bf16, on=keys, suffixes=("_fp32", "_bf16"))
    table = pairs[["size", "context_length", "mode"]].copy()
    table["status"] = pairs["status_fp32"].where(pairs["status_fp32"] != "ok", pairs["status_bf16"])
    for column in columns:
        part = column.removesuffix("_ms_mean")
        table[f"{part}_fp32_ms"] = pairs[f"{column}_fp32"]
        table[f"{part}_bf16_ms"] = pairs[f"{column}_bf16"]
        table[f"{part}_speedup"] = pairs[f"{column}_fp32"] / pairs[f"{column}_bf16"]
    return sorted_by_size(table, "context_length", "mode")


def answer_mp_c(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mp-c: forward/backward time with and without bf16 autocast for every size; trend with size."""
    rows = results.experiment_rows(BENCH)
    rows = rows[~rows["compile"].astype(bool)] if not rows.empty else rows
    table = precision_pairs(rows) if not rows.empty else pd.DataFrame()
    if table.empty or ok_rows(table).empty:
        return Unanswered("mp-c", "`bench` results of the same sizes in fp32 and in bf16 "
                                  "(python -m cs336_profile.run bench --dtype bf16 --name bench_bf16)")
    done = ok_rows(table)
    by_size = done.groupby("size", sort=False)[[c for c in done if c.endswith("_speedup")]].mean()
    by_size = by_size.iloc[size_order(pd.Series(by_size.index)).argsort().to_numpy()]
    sentences = []
    for part in TIMED:
        column = f"{part}_speedup"
        if column not in by_size or by_size[column].isna().all():
            continue
        series = by_size[column].dropna()
        trend = _trend(series)
        sentences.append(f"{part} {series.iloc[0]:.2f}× for {series.index[0]}"
                         + (f" to {series.iloc[-1]:.2f}× for {series.index[-1]} ({trend})" if len(series) > 1 else ""))
    text = "bf16 autocast against fp32, mean speedup over context lengths: " + "; ".join(sentences) + "."
    slower = [f"{row['size']} {part} at context {row['context_length']} ({row[f'{part}_speedup']:.2f}×)"
              for _, row in done.iterrows() for part in TIMED if row.get(f"{part}_speedup", 1.0) < 1]
    if slower:
        text += " bf16 is slower than fp32 for " + ", ".join(slower) + "."
    if len(done) < len(table):
        text += f" {plural(len(table) - len(done), 'configuration')} ran out of memory in one precision."
    return ResultsAnswer("mp-c", text, {"fp32 against bf16 autocast": table}, used_files(rows[rows["size"].isin(table["size"])]))


def _trend(speedups: pd.Series) -> str:
    """Whether the speedup grows, shrinks or stays put from the smallest size to the largest."""
    change = speedups.iloc[-1] - speedups.iloc[0]
    if abs(change) < 0.05 * speedups.iloc[0]:
        return "about flat with size"
    return "growing with model size" if change > 0 else "shrinking with model size"


MP_ACCUM = Question(
    id="mp-accum", section="Mixed precision", title="Accumulation loops",
    text="The four accumulation loops (fp32, fp16, fp32 + fp16, fp32 + upcast fp16): results and errors.",
    needs=f"a `{ACCUMULATION}` results file ({RUN_MIXED_PRECISION})",
    compute=from_results(answer_mp_accum), figure=FigureSpec("mp-accum", alt="Accumulation loops"),
)

MP_A = Question(
    id="mp-a", section="Mixed precision", title="ToyModel dtypes under autocast",
    text="Under autocast, what dtypes do the parameters, activations, loss and gradients have?",
    needs=f"a `{TOY_MODEL}` results file ({RUN_MIXED_PRECISION})",
    compute=from_results(answer_mp_a), figure=FigureSpec("mp-a", alt="ToyModel dtypes under autocast"),
)

MP_C = Question(
    id="mp-c", section="Mixed precision", title="bf16 autocast timings",
    text="Forward and backward time with and without bf16 autocast for every size: what is the trend?",
    needs="`bench` results of the same sizes in fp32 and in bf16 (python -m cs336_profile.run bench --dtype bf16)",
    compute=from_results(answer_mp_c), figure=FigureSpec("mp-c", alt="bf16 autocast timings"),
)
