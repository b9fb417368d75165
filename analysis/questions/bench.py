"""Benchmarking without a profiler: bench-b (mean ± std of forward and backward per size) and
bench-c (the same without warm-up and with 1–2 warm-up steps).

Reads the ``bench`` results (one summary row per configuration) and, for bench-c, the
``bench_steps`` results (one row per step) to show what the first measured step costs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.core.text import ms, pct
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
    sorted_by_size,
    used_files,
    value_span,
)
from cs336_profile.contract import BENCH, BENCH_STEPS

if TYPE_CHECKING:
    import pandas as pd

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
    # The runner creates the model's weights on the device before step 0, so the CUDA context exists by then.
    "cuda": "the CUDA context exists already, as the weights were created on the GPU before the first step; the first "
            "step creates cuBLAS handles and workspaces, loads each kernel's module at its first launch, grows the "
            "caching allocator for activations and gradients and chooses GEMM kernels",
    "cpu": "growing the allocator and the first dispatch of each operator",
}


def _timed_columns(rows: pd.DataFrame) -> list[str]:
    return [f"{part}_ms_{stat}" for part in TIMED for stat in ("mean", "std") if f"{part}_ms_mean" in rows]


def _plain_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """fp32, eager rows: the configurations the benchmarking questions are about."""
    if rows.empty:
        return rows
    return rows[(rows["dtype"] == "fp32") & ~rows["compile"].astype(bool)]


def _spread(results: ResultsSet) -> pd.DataFrame:
    """The run-to-run spread of the fp32 eager configurations (:mod:`run_spread`)."""
    return run_spread.by_configuration(_plain_runs(run_spread.per_run(results)))


def _is_noisy(config: pd.Series) -> bool:
    """A configuration whose steps within a run, or whose runs, differ by more than SMALL_SPREAD."""
    import pandas as pd

    cvs = [config.get(f"{part}_cv_max_share") for part in TIMED]
    ratios = [config.get(f"{part}_between_runs_ratio") for part in TIMED]
    return any(pd.notna(v) and v >= SMALL_SPREAD for v in cvs) or \
        any(pd.notna(r) and r >= 1 + SMALL_SPREAD for r in ratios)


def answer_bench_b(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """bench-b: forward and backward mean ± std per size and context length; is the spread small,
    within a run and between runs of the same configuration? The traces of the same sizes say
    whether the noisy ones wait on the CPU's launches."""
    results = evidence.results
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
    medians = {part: done[f"{part}_std_over_mean_share"].median() for part in TIMED
               if f"{part}_std_over_mean_share" in done and done[f"{part}_std_over_mean_share"].notna().any()}
    if not medians:
        return Unanswered("bench-b", "a `bench` results file with at least two measured steps (a standard deviation)")
    spread = _spread(results)
    tables = {"Forward and backward time per configuration": table}
    numbers = {"runs": len(done), "configurations": int(done.groupby(["size", "context_length", "mode"]).ngroups),
               **{f"{part}_cv_median_share": value for part, value in medians.items()}}
    for part in TIMED:
        share = done.get(f"{part}_std_over_mean_share")
        if share is not None and share.notna().any():
            worst = done.loc[share.idxmax()]
            numbers[f"{part}_cv_max_share"] = share.max()
            numbers[f"{part}_cv_max_size"] = worst["size"]
    if not spread.empty:
        spread = spread.assign(noisy=spread.apply(_is_noisy, axis=1))
        tables["Spread within and between runs of one configuration"] = spread[
            ["size", "context_length", "mode", "runs", "noisy",
             *[c for c in spread if c.endswith(("_cv_median_share", "_cv_max_share", "_run_mean_min_ms",
                                                "_run_mean_max_ms", "_between_runs_ratio"))
               and not c.startswith("step_")]]]
        numbers["noisy_sizes"] = list(dict.fromkeys(spread.loc[spread["noisy"], "size"]))
        numbers["steady_sizes"] = list(dict.fromkeys(spread.loc[~spread["noisy"], "size"]))
    text = _bench_b_text(done, numbers, spread) + _launch_text(evidence.summaries, set(done["context_length"]), numbers)
    if len(done) < len(table):
        text += f" {plural(len(table) - len(done), 'configuration')} ran out of memory."
    return ResultsAnswer("bench-b", text, tables, used_files(rows), numbers)


def _launch_text(summaries: list[dict], contexts: set, numbers: dict) -> str:
    """GPU idle share of the one-GPU fp32 eager forward in the traces at the benchmark's context
    lengths, for the noisy and the steady sizes."""
    import pandas as pd

    shares: dict[str, list[float]] = {}
    for summary in summaries:
        config = summary.get("config") or {}
        share = story.idle_share(summary)
        if share is not None and config.get("dtype") == "fp32" and not config.get("compile") and not config.get("parallel") \
                and config.get("mode") == "forward" and (config.get("attention") or "naive") == "naive" \
                and config.get("context_length") in contexts:
            shares.setdefault(config.get("size"), []).append(share)
    groups = {kind: [s for size in numbers.get(f"{kind}_sizes", []) for s in shares.get(size, [])]
              for kind in ("noisy", "steady")}
    if not groups["noisy"] or not groups["steady"]:
        return ""
    noisy, steady = groups["noisy"], groups["steady"]
    numbers.update(noisy_idle_share_min=min(noisy), steady_idle_share_max=max(steady))
    text = (f" In the nsys traces of the same sizes and context (fp32 forward passes), the GPU idles {_share_span(noisy)} of the "
            f"span for {joined(pd.Series(numbers['noisy_sizes']))} against {_share_span(steady)} for "
            f"{joined(pd.Series(numbers['steady_sizes']))}")
    if min(noisy) > max(steady):
        text += ": the noisy sizes' time follows the CPU's kernel launches, which vary from run to run."
    return text + ("" if min(noisy) > max(steady) else ".")


def _share_span(shares: list[float]) -> str:
    """``43–69%`` or ``70%``."""
    low, high = f"{min(shares):.0%}", f"{max(shares):.0%}"
    return low if low == high else f"{low[:-1]}–{high}"


def _bench_b_text(done: pd.DataFrame, numbers: dict, spread: pd.DataFrame) -> str:
    """The median spread within a run, where the large spreads are, and how far runs of one
    configuration disagree: the noise a single run of each size carries."""
    import pandas as pd

    medians = " and ".join(f"{pct(numbers[f'{part}_cv_median_share'])}{' of its mean' if i == 0 else ''} for the "
                           f"{part} pass" for i, part in enumerate(p for p in TIMED if f"{p}_cv_median_share" in numbers))
    text = (f"Over {plural(numbers['runs'], 'run')} of {plural(numbers['configurations'], 'configuration')} "
            f"({_range_text(done)}; {value_span(done['warmup_steps'])} warm-up and "
            f"{value_span(done['measured_steps'])} measured steps), a run's standard deviation is, at the median, "
            f"{medians}.")
    if spread.empty or "noisy" not in spread:
        verdict = "small" if max(numbers.get(f"{p}_cv_max_share", 0) for p in TIMED) < SMALL_SPREAD else "not small"
        return text + f" The largest is {pct(numbers['forward_cv_max_share'])} (forward): the spread is {verdict}."
    noisy, steady = spread[spread["noisy"]], spread[~spread["noisy"]]
    if not noisy.empty:
        worst = max(TIMED, key=lambda part: noisy.get(f"{part}_cv_max_share", pd.Series([0])).max())
        text += (f" The large spreads belong to {joined(noisy['size'])}: up to "
                 f"{pct(noisy[f'{worst}_cv_max_share'].max())} ({worst} pass)")
        # runs that disagree by more than their steps vary within a run
        apart = noisy[(noisy["runs"] > 1)
                      & (noisy["forward_between_runs_ratio"] - 1 > noisy["forward_cv_median_share"])]
        if not apart.empty:
            ranges = "; ".join(f"{row['size']} {row['forward_run_mean_min_ms']:.1f}–{row['forward_run_mean_max_ms']:.1f} ms"
                               f" ({row['forward_between_runs_ratio']:.2f}×)" for _, row in apart.iterrows())
            text += (f", and separate runs of one configuration disagree more than steps within a run: "
                     f"forward means over {value_span(apart['runs'])} runs (a run without warm-up counted from its second "
                     f"step) of {ranges}")
        text += "."
    if not steady.empty:
        worst_cv = max(steady[f"{p}_cv_max_share"].max() for p in TIMED if f"{p}_cv_max_share" in steady)
        text += f" Runs of {joined(steady['size'])} stay within {pct(worst_cv)} of their mean"
        several = steady[steady["runs"] > 1]
        if not several.empty:
            agree = max(several[f"{p}_between_runs_ratio"].max() for p in TIMED) - 1
            text += f" and agree with each other within {pct(agree)}"
        text += "."
    if not noisy.empty and (noisy["runs"] > 1).any():
        widest = noisy["forward_between_runs_ratio"].max()
        text += (f" So one run of {joined(noisy['size'])} does not measure the model: on them, an effect smaller "
                 f"than {widest:.2f}× is inside the noise of this data.")
    return text


def _range_text(rows: pd.DataFrame) -> str:
    sizes = list(dict.fromkeys(rows["size"]))
    contexts = sorted(rows["context_length"].unique())
    lengths = "context length" if len(contexts) == 1 else "context lengths"
    return f"{'size' if len(sizes) == 1 else 'sizes'} {', '.join(sizes)}; {lengths} {', '.join(str(c) for c in contexts)}"


def first_step_table(steps: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and warm-up count: the first measured step's time, the later steps' mean and
    ``config_index`` (0: the first configuration its process ran)."""
    import pandas as pd

    measured = run_spread.with_config_index(steps[steps["step_kind"] == "measured"])
    keys = [*CONFIG_KEYS, "warmup_steps", "config_index"]
    first = measured[measured["step_index"] == 0].groupby(keys, dropna=False)["step_ms"].mean().rename("first_step_ms")
    later = measured[measured["step_index"] > 0].groupby(keys, dropna=False)["step_ms"].mean().rename("later_steps_ms")
    table = pd.concat([first, later], axis=1).reset_index()
    table["first_over_later_ratio"] = table["first_step_ms"] / table["later_steps_ms"]
    return table


def answer_bench_c(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """bench-c: the same configurations with 0, 1, 2… warm-up steps; how and why they differ, against
    the spread between runs of one configuration."""
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
    numbers: dict = {}
    if not steps.empty:
        first = first_step_table(_plain_runs(steps)).merge(table[["size", "context_length", "mode", "warmup_steps"]])
        first = sorted_by_size(first, "context_length", "mode", "warmup_steps")
        tables[FIRST_STEP_TITLE] = first[["size", "context_length", "mode", "warmup_steps", "config_index",
                                          "first_step_ms", "later_steps_ms", "first_over_later_ratio"]]
        later = _later_steps_by_warmup(results)
        if not later.empty:
            tables[LATER_STEPS_TITLE] = later
        inputs += used_files(steps)
    text = _bench_c_text(table, tables, numbers)
    return ResultsAnswer("bench-c", text, tables, tuple(sorted(set(inputs))), numbers)


LATER_STEPS_TITLE = "Step time after the first step, by warm-up count, against the spread between runs"


def _later_steps_by_warmup(results: ResultsSet) -> pd.DataFrame:
    """Per size: the mean step time of each run's steady steps (after its first step when it had no
    warm-up), one column per warm-up count, and the ratio of the largest to the smallest."""
    import pandas as pd

    runs = _plain_runs(run_spread.per_run(results))
    if runs.empty or "step_ms_mean" not in runs:
        return pd.DataFrame()
    runs = runs.groupby(["size", "context_length", "mode", "warmup_steps"])["step_ms_mean"].mean().unstack()
    if len(runs.columns) < 2:
        return pd.DataFrame()
    wide = runs.rename(columns=lambda warmup: f"after_{warmup}_warmup_step_ms")
    wide["between_runs_ratio"] = runs.max(axis=1) / runs.min(axis=1)
    # a warm-up effect would make the steps faster the more warm-up steps came before them
    wide["falls_with_warmup"] = runs.apply(lambda row: row.dropna().is_monotonic_decreasing, axis=1)
    return sorted_by_size(wide.reset_index(), "context_length", "mode")


def _bench_c_text(table: pd.DataFrame, tables: dict[str, pd.DataFrame], numbers: dict) -> str:
    """The first step's one-off cost (who pays it: the first configuration of the process), then
    whether anything beyond it changes with the warm-up count, against the spread between runs."""
    import pandas as pd

    first = tables.get(FIRST_STEP_TITLE)
    cold_first = pd.DataFrame() if first is None else \
        first[first["warmup_steps"] == 0].dropna(subset=["first_over_later_ratio"])
    if cold_first.empty:
        cold, warm = table.iloc[0], table[table["size"] == table.iloc[0]["size"]].iloc[-1]
        return (f"For {cold['size']}, a step averages {ms(cold['step_ms_mean'])} ± {ms(cold['step_ms_std'])} without "
                f"warm-up against {ms(warm['step_ms_mean'])} ± {ms(warm['step_ms_std'])} after "
                f"{plural(warm['warmup_steps'], 'warm-up step')}; without per-step rows the first step's share "
                "cannot be told from the rest.")
    opener = cold_first.loc[cold_first["first_over_later_ratio"].idxmax()]
    numbers.update(first_step_ms=opener["first_step_ms"], later_steps_ms=opener["later_steps_ms"],
                   first_over_later_ratio=opener["first_over_later_ratio"], first_step_size=opener["size"],
                   first_step_config_index=opener["config_index"])
    device = table["device"].iloc[0]
    position = "" if pd.isna(opener["config_index"]) else " (the first configuration of its process)" \
        if opener["config_index"] == 0 else f" (configuration {int(opener['config_index']) + 1} of its process)"
    text = (f"Without warm-up the first measured step of {opener['size']}{position} takes "
            f"{ms(opener['first_step_ms'])}, {opener['first_over_later_ratio']:.1f}× its later steps "
            f"({ms(opener['later_steps_ms'])})")
    if opener["first_over_later_ratio"] > FIRST_STEP_SLOW:
        text += f": one-off costs ({ONE_OFF_COSTS.get(device, ONE_OFF_COSTS['cpu'])})."
    else:
        text += ": this device has little to warm up."
    others = cold_first.drop(index=opener.name)
    if not others.empty:
        low, high = others["first_over_later_ratio"].min(), others["first_over_later_ratio"].max()
        numbers.update(others_first_over_later_min=low, others_first_over_later_max=high)
        after = bool((others["config_index"] > opener["config_index"]).all())
        span = f"{low:.1f}×" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}–{high:.1f}×"
        one = len(others) == 1
        text += (f" The {'configuration' if one else plural(len(others), 'configuration')} run "
                 f"{'after it in the same process' if after else 'beside it'} {'pays' if one else 'pay'} {span} on "
                 f"{'its' if one else 'their'} first step"
                 + (": the process is already warm, so the one-off cost lands on whichever configuration runs first."
                    if after else "."))
    later = tables.get(LATER_STEPS_TITLE)
    if later is None or not (later["size"] == opener["size"]).any():
        return text
    row = later[later["size"] == opener["size"]].iloc[0]
    columns = [c for c in later if c.startswith("after_") and pd.notna(row[c])]
    values = ", ".join(f"{row[c]:.1f}" for c in columns)
    counts = ", ".join(c.split("_")[1] for c in columns)
    numbers.update(later_between_runs_ratio=row["between_runs_ratio"],
                   later_falls_with_warmup=bool(row["falls_with_warmup"]))
    text += (f" Beyond the first step, runs of {opener['size']} with {counts} warm-up steps average {values} ms per "
             f"step ({row['between_runs_ratio']:.2f}× apart)")
    if row["falls_with_warmup"]:
        text += ": later steps get faster with more warm-up."
    else:
        text += (": they do not get faster with more warm-up, so the spread between runs is larger than any warm-up "
                 "effect beyond the first step and this data cannot rank one warm-up count against another.")
    steady = later[later["between_runs_ratio"] < 1 + SMALL_SPREAD]
    if not steady.empty:
        text += (f" Runs of {joined(steady['size'])} agree within {pct(steady['between_runs_ratio'].max() - 1)} "
                 "whatever the warm-up.")
    return text


BENCH_B = Question(
    id="bench-b", section="Benchmarking", title="Forward and backward times",
    text="Forward and backward times (mean ± std) for every size: is the spread small?",
    needs="a `bench` results file (python -m cs336_profile.run bench)",
    compute=answer_bench_b, figure=FigureSpec("bench-b", alt="Forward and backward times"),
)

BENCH_C = Question(
    id="bench-c", section="Benchmarking", title="Warm-up steps",
    text="The same without warm-up and with 1–2 warm-up steps: how and why do results differ?",
    needs="`bench` results with 0, 1 and 2 warm-up steps (python -m cs336_profile.run bench --warmup N)",
    compute=from_results(answer_bench_c), figure=FigureSpec("bench-c", alt="Warm-up steps"),
)
