"""Mixed precision: mp-accum (the four accumulation loops), mp-a (the ToyModel's dtypes under
autocast) and mp-c (forward/backward with and without bf16 autocast, per size).

Reads the ``mixed_precision_accumulation`` and ``mixed_precision_toy_model`` results, and the
``bench`` results for mp-c (fp32 and bf16 rows of otherwise equal configurations).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.questions.bench import BENCH, CONFIG_KEYS, TIMED
from analysis.questions.question import Evidence, Question, from_results
from analysis.questions.records import FigureSpec
from analysis.questions.shared import run_spread, story
from analysis.questions.shared.results_files import (
    ResultsAnswer,
    ResultsSet,
    Unanswered,
    joined,
    ok_rows,
    plural,
    size_order,
    sorted_by_size,
    used_files,
    value_span,
)
from analysis.questions.shared.trace_pairs import phase_pairs
from cs336_profile.contract import ADDEND, ADDITIONS
from cs336_profile.contract import MIXED_PRECISION_ACCUMULATION as ACCUMULATION
from cs336_profile.contract import MIXED_PRECISION_TOY_MODEL as TOY_MODEL

if TYPE_CHECKING:
    import pandas as pd

RUN_MIXED_PRECISION = "python -m cs336_profile.run mixed-precision"
FULL_PRECISION = "float32"


def answer_mp_accum(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mp-accum: each loop's printed result and its error against the exact 10.0."""
    import numpy as np

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
    stalls = _stall_text(low)
    if stalls:
        sentences.append(stalls)
    return ResultsAnswer("mp-accum", " ".join(sentences), {"Accumulation loops (exact sum 10.0)": table},
                         used_files(rows), {"stall_points": {d: stall_point(d) for d in MANTISSA_BITS}})


# Stored mantissa bits of the low-precision formats (IEEE fp16: 10; bfloat16: 7).
MANTISSA_BITS = {"float16": 10, "bfloat16": 7}


def stall_point(dtype: str, addend: float = ADDEND) -> float:
    """The sum at which adding ``addend`` in ``dtype`` stops changing it: the smallest power of two
    from which half the spacing between representable numbers, 2^(e − bits − 1), exceeds the addend."""
    import numpy as np

    exponent = int(np.floor(np.log2(addend)))
    while 2.0 ** (exponent - MANTISSA_BITS[dtype] - 1) <= addend:
        exponent += 1
    return 2.0 ** exponent


def _stall_text(low: pd.DataFrame) -> str:
    """Where each low-precision accumulator stops growing, against what it printed."""
    import numpy as np

    parts = []
    for row in low.itertuples():
        if row.accumulator_dtype not in MANTISSA_BITS:
            continue
        stall = stall_point(row.accumulator_dtype)
        spacing = 2.0 ** (np.log2(stall) - MANTISSA_BITS[row.accumulator_dtype])
        if abs(row.result - stall) < 1e-9:
            parts.append(f"{row.accumulator_dtype} stalls at {stall:g}: from there half the spacing of its numbers "
                         f"({spacing / 2:g}) exceeds 0.01, so every addition rounds back to the sum")
        else:
            parts.append(f"{row.accumulator_dtype} would stall only at {stall:g}, beyond 10, so its sum drifts by "
                         "rounding each addition instead")
    return ("Where a sum stops growing: " + "; ".join(parts) + ".") if parts else ""


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
    reasons = _autocast_reasons(first, autocasts[0])
    if reasons:
        text += " Why: " + "; ".join(reasons) + "."
    return ResultsAnswer("mp-a", text, {"dtypes observed in the ToyModel": dtype_table(rows)}, used_files(rows))


# Why autocast gives a quantity the dtype it has, by what the quantity is, and the dtype class the
# reason explains (``low``: the autocast dtype, ``fp32``). A reason is given only when observed.
AUTOCAST_REASONS = (
    ("parameters", FULL_PRECISION, "autocast casts a copy per op and leaves the stored parameters fp32"),
    ("gradient", FULL_PRECISION, "a gradient takes its fp32 parameter's dtype"),
    ("fc", "low", "linear layers (matmuls) are on autocast's low-precision list"),
    ("ReLU", "low", "ReLU is on neither of autocast's lists and keeps its input's dtype"),
    ("LayerNorm", FULL_PRECISION, "layer_norm is on autocast's fp32 list (its statistics need the precision)"),
    ("loss", FULL_PRECISION, "the loss (cross-entropy, a log-softmax and a sum) is on autocast's fp32 list"),
)


def _autocast_reasons(rows: pd.DataFrame, autocast: str) -> list[str]:
    """The reasons of :data:`AUTOCAST_REASONS` whose quantities were observed with that dtype."""
    reasons = []
    for key, dtype_class, reason in AUTOCAST_REASONS:
        wanted = autocast if dtype_class == "low" else FULL_PRECISION
        gradients = rows["quantity"].str.startswith("gradient")
        observed = rows[rows["quantity"].str.contains(key, regex=False) & (gradients if key == "gradient" else ~gradients)]
        if not observed.empty and (observed["dtype"] == wanted).all():
            reasons.append(reason)
    return reasons


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


def _with_fp32_spread(table: pd.DataFrame, results: ResultsSet) -> pd.DataFrame:
    """The pairs with the fp32 runs' spread: the lowest and highest fp32 run mean of the same
    configuration and the speedups they give against the bf16 mean; ``*_speedup_settled`` when
    that whole band lies on one side of 1."""
    import pandas as pd

    runs = run_spread.per_run(results)
    spread = run_spread.by_configuration(runs[(runs["dtype"] == "fp32") & ~runs["compile"].astype(bool)]) \
        if not runs.empty else pd.DataFrame()
    if spread.empty:
        return table
    table = table.merge(spread[["size", "context_length", "mode", "runs",
                                *[f"{p}_run_mean_{e}_ms" for p in TIMED for e in ("min", "max")]]]
                        .rename(columns={"runs": "fp32_runs"}), on=["size", "context_length", "mode"], how="left")
    for part in TIMED:
        low = table[f"{part}_run_mean_min_ms"] / table[f"{part}_bf16_ms"]
        high = table[f"{part}_run_mean_max_ms"] / table[f"{part}_bf16_ms"]
        table[f"{part}_speedup_low"], table[f"{part}_speedup_high"] = low, high
        table[f"{part}_speedup_settled"] = (low > 1) | (high < 1)
        table = table.drop(columns=[f"{part}_run_mean_min_ms", f"{part}_run_mean_max_ms"])
    return table


def _precision_side(config: dict) -> str | None:
    """fp32 or bf16 for a one-GPU eager, naive-attention trace; None for any other (a multi-GPU
    rank is no twin of a one-GPU run)."""
    plain = (not config.get("compile") and (config.get("attention") or "naive") == "naive"
             and not config.get("parallel"))
    return config.get("dtype") if plain else None


def answer_mp_c(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """mp-c: forward/backward time with and without bf16 autocast for every size; the trend with
    size, weighed against the fp32 runs' spread, and why, from the fp32/bf16 trace pairs."""
    import pandas as pd

    results = evidence.results
    rows = results.experiment_rows(BENCH)
    rows = rows[~rows["compile"].astype(bool)] if not rows.empty else rows
    table = precision_pairs(rows) if not rows.empty else pd.DataFrame()
    if table.empty or ok_rows(table).empty:
        return Unanswered("mp-c", "`bench` results of the same sizes in fp32 and in bf16 "
                                  "(python -m cs336_profile.run bench --dtype bf16 --name bench_bf16)")
    table = _with_fp32_spread(table, results)
    done = ok_rows(table)
    by_size = done.groupby("size", sort=False)[[c for c in done if c.endswith("_speedup")]].mean()
    by_size = by_size.iloc[size_order(pd.Series(by_size.index)).argsort().to_numpy()]
    sentences = []
    for part in TIMED:
        column = f"{part}_speedup"
        if column not in by_size or by_size[column].isna().all():
            continue
        series = by_size[column].dropna()
        sentences.append(f"{part} " + ", ".join(f"{size} {value:.2f}×" for size, value in series.items())
                         + (f" ({_trend(series)})" if len(series) > 1 else ""))
    text = "bf16 autocast against fp32, speedup of the mean: " + "; ".join(sentences) + "."
    text += _spread_text(done) + _slower_text(done)
    tables = {"fp32 against bf16 autocast": table}
    pairs = phase_pairs(evidence.summaries, _precision_side, ("fp32", "bf16"))
    numbers: dict = {}
    if not pairs.empty:
        tables["Forward pass in the fp32 and bf16 traces"] = pairs
        text += " " + _trace_text(pairs, numbers)
    if len(done) < len(table):
        text += f" {plural(len(table) - len(done), 'configuration')} ran out of memory in one precision."
    numbers.update({f"{part}_speedup_by_size": by_size[f"{part}_speedup"].to_dict() for part in TIMED
                    if f"{part}_speedup" in by_size})
    return ResultsAnswer("mp-c", text, tables, used_files(rows[rows["size"].isin(table["size"])]), numbers)


def _spread_text(done: pd.DataFrame) -> str:
    """Which forward speedups the spread between fp32 runs of the same configuration leaves standing."""
    if "forward_speedup_settled" not in done or done["fp32_runs"].fillna(0).max() < 2:
        return ""
    several = done[(done["fp32_runs"] > 1) & done["forward_speedup"].notna()]  # a time left out has no speedup
    unsettled = several[~several["forward_speedup_settled"].astype(bool)]
    if unsettled.empty:
        return (f" Every forward speedup stands outside the spread between fp32 runs "
                f"({value_span(several['fp32_runs'])} runs per configuration).")
    bands = ", ".join(f"{row['size']} {row['forward_speedup']:.2f}× (fp32 runs give "
                      f"{row['forward_speedup_low']:.2f}–{row['forward_speedup_high']:.2f}×)"
                      for _, row in unsettled.iterrows())
    return (f" Against the spread between fp32 runs of the same configuration "
            f"({value_span(several['fp32_runs'])} runs), the forward speedup of {bands} could lie on either side "
            "of 1: the data does not say whether bf16 speeds these up or slows them down.")


def _slower_text(done: pd.DataFrame) -> str:
    """The configurations and parts bf16 slows down, where the fp32 runs' spread leaves that standing."""
    slower = []
    for _, row in done.iterrows():
        for part in TIMED:
            unsettled = row.get("fp32_runs", 0) > 1 and not row.get(f"{part}_speedup_settled", True)
            if row.get(f"{part}_speedup", 1.0) < 1 and not unsettled:
                slower.append(f"{row['size']} {part} at context {row['context_length']} ({row[f'{part}_speedup']:.2f}×)")
    return " bf16 is slower than fp32 for " + ", ".join(slower) + "." if slower else ""


def _trace_text(pairs: pd.DataFrame, numbers: dict) -> str:
    """What bf16 changes in the traced forward: less kernel time, more kernels (casts), and how much
    of the span the GPU idles."""
    numbers.update(kernel_time_cut_min=pairs["kernel_time_cut"].min(), kernel_time_cut_max=pairs["kernel_time_cut"].max(),
                   added_kernels_min=pairs["added_kernels_per_pass"].min(),
                   added_kernels_max=pairs["added_kernels_per_pass"].max(),
                   bf16_idle_share_min=pairs["idle_share_bf16"].min(), bf16_idle_share_max=pairs["idle_share_bf16"].max(),
                   fp32_idle_share_min=pairs["idle_share_fp32"].min(), fp32_idle_share_max=pairs["idle_share_fp32"].max())
    largest = pairs.iloc[-1]
    label = f"{largest['size']} ctx{largest['context_length']} {largest['mode']}"
    text = (f"In the {plural(len(pairs), 'fp32/bf16 trace pair')} ({joined(pairs['size'])}), bf16 cuts the forward's "
            f"kernel time {_span(pairs['kernel_time_cut'], '×')} ({label}: {largest['kernel_ms_fp32']:.2f} → "
            f"{largest['kernel_ms_bf16']:.2f} ms, GEMMs {largest['gemm_ms_fp32']:.2f} → {largest['gemm_ms_bf16']:.2f} ms)"
            f" but launches {_span(pairs['added_kernels_per_pass'], '', '.0f')} more kernels per pass, autocast's "
            f"casts among them (cast time {largest['copy_cast_ms_fp32']:.2f} → {largest['copy_cast_ms_bf16']:.2f} ms "
            f"for {label}).")
    if (pairs["idle_share_bf16"] >= story.LAUNCH_BOUND_IDLE_SHARE).all():
        text += (f" The GPU idles {_span(pairs['idle_share_bf16'] * 100, '%', '.0f')} of the bf16 forward's span "
                 f"(fp32: {_span(pairs['idle_share_fp32'] * 100, '%', '.0f')}): these forwards wait on the CPU's "
                 "launches, so the smaller GPU work does not shorten them and the extra launches can lengthen them.")
    return text


FLAT_STEP = 0.05  # a change of less than 5% from one size to the next is no trend


def _span(values: pd.Series, unit: str, spec: str = ".1f") -> str:
    """``2.0–3.0×`` or ``3.0×`` when the ends print the same."""
    low, high = format(values.min(), spec), format(values.max(), spec)
    return f"{low}{unit}" if low == high else f"{low}–{high}{unit}"


def _trend(speedups: pd.Series) -> str:
    """Whether the speedup grows, shrinks or stays put from each size to the next (a step of less
    than :data:`FLAT_STEP` counts as flat); a series that goes both ways names where it drops."""
    steps = speedups.diff().iloc[1:] / speedups.shift().iloc[1:]
    if (steps.abs() < FLAT_STEP).all():
        return "about flat with size"
    if (steps > -FLAT_STEP).all():
        return "growing with model size"
    if (steps < FLAT_STEP).all():
        return "shrinking with model size"
    drops = [f"{before} {speedups[before]:.2f}× → {after} {speedups[after]:.2f}×"
             for before, after, step in zip(speedups.index[:-1], speedups.index[1:], steps) if step <= -FLAT_STEP]
    return "not monotonic in size: it drops at " + ", ".join(drops)


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
    compute=answer_mp_c, figure=FigureSpec("mp-c", alt="bf16 autocast timings"),
)
