"""mp-b: which parts of LayerNorm are sensitive in fp16 and bf16, and whether bf16 still needs an
fp32 LayerNorm, from the runner's measurement on the model's real activations.

Reads the ``layernorm`` results (one row per norm site of the model, norm, dtype and
computation: ``low`` = every operation in fp16/bf16, ``upcast`` = the input rounded to fp16/bf16,
the arithmetic in fp32; errors relative to fp32). The answer compares, per dtype, the error each
part (mean, variance, 1/sqrt, output) gets from computing in low precision against what rounding
the input alone gives, and the largest input against fp16's overflow point for the squares.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.questions.question import Question, from_results
from analysis.questions.records import FigureSpec
from analysis.questions.shared.results_files import ResultsAnswer, ResultsSet, Unanswered, plural, used_files
from cs336_profile.contract import NORM_PRECISION

if TYPE_CHECKING:
    import pandas as pd

RUN_LAYERNORM = "python -m cs336_profile.run layernorm"
PARTS = {"mean": "mean_rel_error", "variance": "spread_rel_error", "1/sqrt(variance + eps)": "inv_rel_error",
         "output": "output_rel_error"}
COUNTS = ("overflow_count", "underflow_squares", "zero_spread_rows")
LAYERNORM = "layernorm"
# A part whose error grows this many times when computed in the low dtype (against rounding the
# input only) counts as sensitive to the low-precision arithmetic.
SENSITIVE = 5.0
# An output error this many times larger computed in bf16 than with fp32 statistics is a loss an
# fp32 LayerNorm buys back (below it the input's own rounding dominates).
PRECISION_GAIN = 1.5


def error_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per norm, dtype and computation: the largest relative error of each part over the norm
    sites, the largest absolute output error, and the summed counts of non-finite values,
    underflowed squares and zero-variance tokens."""
    columns = {column: "max" for column in [*PARTS.values(), "output_max_abs_error"] if column in rows}
    columns |= {column: "sum" for column in COUNTS if column in rows}
    table = rows.groupby(["norm", "dtype", "compute"], sort=False).agg(columns).reset_index()
    return table.rename(columns={column: f"{column}_max" for column in PARTS.values() if column in table})


def answer_mp_b(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mp-b: the error of each part of LayerNorm in fp16 and bf16 against fp32, on real activations."""
    import numpy as np

    rows = results.experiment_rows(NORM_PRECISION)
    if rows.empty:
        return Unanswered("mp-b", f"a `{NORM_PRECISION}` results file ({RUN_LAYERNORM})")
    table = error_table(rows)
    largest = rows.loc[rows["input_abs_max"].idxmax()]
    first = rows.iloc[0]
    numbers = {"sites": int(rows["site"].nunique()), "input_abs_max": float(largest["input_abs_max"]),
               "overflow_margin": float(np.sqrt(fp16_max()) / largest["input_abs_max"]),
               "elements": int((rows.drop_duplicates("site")["tokens"] * rows.drop_duplicates("site")["width"]).sum())}
    text = (f"Measured on the activations entering the {plural(numbers['sites'], 'norm site')} of the {first['handout']} "
            f"{first['size']} model (context {first['context_length']}, batch {first['batch_size']}, after "
            f"{first['train_steps']} training steps; {int(first['tokens']):,} tokens × {int(first['width'])} values "
            f"each), against fp32.")
    text += _overflow_text(table, largest, numbers)
    for dtype in [d for d in ("fp16", "bf16") if d in set(table["dtype"])]:
        text += _dtype_text(table, dtype, numbers)
    text += _verdict_text(table, numbers)
    tables = {"Largest error over the norm sites, per norm, dtype and computation": table,
              "Activations entering each norm": rows.drop_duplicates("site")[
                  ["site", "input_abs_max", "input_rms", "input_abs_min_nonzero", "tokens", "width"]]}
    return ResultsAnswer("mp-b", text, tables, used_files(rows), numbers)


def fp16_max() -> float:
    """fp16's largest finite value."""
    import numpy as np

    return float(np.finfo(np.float16).max)


def _overflow_text(table: pd.DataFrame, largest: pd.Series, numbers: dict) -> str:
    """fp16's range against the largest input: do the squares (the variance's terms) overflow?"""
    import numpy as np

    overflowed = int(table["overflow_count"].sum()) if "overflow_count" in table else 0
    numbers["overflow_count"] = overflowed
    threshold = np.sqrt(fp16_max())
    text = (f" The largest |x| entering a norm is {largest['input_abs_max']:.1f} ({largest['site']}); its square, "
            f"{largest['input_abs_max'] ** 2:,.0f}, is far below fp16's largest value {fp16_max():,.0f}, which a "
            f"square passes from |x| ≥ {threshold:.0f}")
    if overflowed:
        return text + f": yet {overflowed:,} non-finite values appeared, so fp16 overflows here."
    return (text + f": no value overflowed. fp16's known risk, squares that overflow, needs activations "
            f"{numbers['overflow_margin']:.1f}× larger than these, so this data cannot show it.")


def _part_errors(table: pd.DataFrame, dtype: str, compute: str) -> pd.Series:
    import pandas as pd

    row = table[(table["norm"] == LAYERNORM) & (table["dtype"] == dtype) & (table["compute"] == compute)]
    return pd.Series({part: row.iloc[0][f"{column}_max"] for part, column in PARTS.items()}) if len(row) else pd.Series()


def _dtype_text(table: pd.DataFrame, dtype: str, numbers: dict) -> str:
    """Per part: the error of computing in ``dtype`` against that of rounding the input alone."""
    import numpy as np

    low, upcast = _part_errors(table, dtype, "low"), _part_errors(table, dtype, "upcast")
    if low.empty or upcast.empty:
        return ""
    growth = (low / upcast).replace([np.inf], np.nan)
    numbers[f"{dtype}_output_error_low"] = low["output"]
    numbers[f"{dtype}_output_error_upcast"] = upcast["output"]
    parts = ", ".join(f"{part} {low[part]:.3%} ({growth[part]:.1f}×)" for part in PARTS)
    text = (f" LayerNorm computed in {dtype}: largest relative error {parts} — in parentheses the factor over "
            f"rounding the input to {dtype} and computing in fp32.")
    counted = table[(table["norm"] == LAYERNORM) & (table["dtype"] == dtype) & (table["compute"] == "low")]
    if "underflow_squares" in counted and counted["underflow_squares"].sum():
        share = counted["underflow_squares"].sum() / numbers["elements"]
        text += f" {int(counted['underflow_squares'].sum()):,} squares over all sites ({share:.4%}) round to zero in {dtype}."
    return text


def _verdict_text(table: pd.DataFrame, numbers: dict) -> str:
    """Which parts lose most from low-precision arithmetic, whether that follows the mantissa,
    and what an fp32 LayerNorm buys under bf16, from the errors."""
    text = ""
    low = {dtype: _part_errors(table, dtype, "low") for dtype in ("fp16", "bf16")}
    upcast = {dtype: _part_errors(table, dtype, "upcast") for dtype in ("fp16", "bf16")}
    growth = {dtype: low[dtype] / upcast[dtype] for dtype in low if not low[dtype].empty and not upcast[dtype].empty}
    if growth:
        worst = sorted({part for g in growth.values() for part in g[g >= SENSITIVE].index}, key=list(PARTS).index)
        numbers["sensitive_parts"] = worst
        if worst:
            text += (f" The parts that lose most from low-precision arithmetic are the {' and the '.join(worst)}: "
                     "one number per row, stored in the low dtype it keeps that dtype's rounding, while in fp32 the "
                     "rounding of the inputs averages out over the row.")
    if not low["fp16"].empty and not low["bf16"].empty:
        ratio = low["bf16"]["variance"] / low["fp16"]["variance"]
        numbers["bf16_over_fp16_variance_error"] = ratio
        text += (f" The variance's error in bf16 is {ratio:.1f}× fp16's, as bf16's 3 fewer mantissa bits (2³ = 8) "
                 "predict.")
    if "bf16_output_error_low" in numbers:
        ratio = numbers["bf16_output_error_low"] / numbers["bf16_output_error_upcast"]
        numbers["bf16_low_over_upcast"] = ratio
        text += (f" bf16 has fp32's range, so nothing overflows, but computing LayerNorm in bf16 gives "
                 f"{numbers['bf16_output_error_low']:.2%} output error against "
                 f"{numbers['bf16_output_error_upcast']:.2%} with the input in bf16 and the statistics in fp32 "
                 f"({ratio:.1f}×)")
        if "fp16_output_error_low" in numbers:
            text += f"; fp16 computed throughout gives {numbers['fp16_output_error_low']:.3%}"
        text += (". So bf16 does not need an fp32 LayerNorm to stay finite, but gains precision from one: fp32 "
                 "statistics bring the output error down to the input's own rounding." if ratio > PRECISION_GAIN else
                 ". So bf16 gains little from an fp32 LayerNorm on these activations.")
    return text


MP_B = Question(
    id="mp-b", section="Mixed precision", title="LayerNorm in low precision",
    text="Which parts of LayerNorm are sensitive to fp16, and does bf16 still need LayerNorm in fp32?",
    needs=f"a `{NORM_PRECISION}` results file ({RUN_LAYERNORM})",
    compute=from_results(answer_mp_b), figure=FigureSpec("mp-b", alt="LayerNorm error per part and dtype"),
)
