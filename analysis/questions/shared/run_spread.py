"""Run-to-run spread of the ``bench`` results: the noise an effect must beat before it counts.

Two kinds of noise, per configuration (size, context length, mode, dtype, ...):

- **within a run**: the coefficient of variation (std / mean) of one run's measured steps;
- **between runs**: the ratio of the largest to the smallest run mean over runs of the same
  configuration (different results files, different warm-up counts).

A run's "steady" steps are its measured steps that follow at least one earlier step of the same
configuration: a run without warm-up loses its first measured step (the one-off cost bench-c
studies), every other step counts. ``first_in_process`` marks configurations that some run
timed first in its process (``config_index`` 0), which pays the process's start-up costs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.questions.shared.results_files import RESULTS_FILE_COLUMN, ResultsSet, ok_rows, sorted_by_size
from cs336_profile.contract import BENCH, BENCH_STEPS

if TYPE_CHECKING:
    import pandas as pd

# What makes two runs the same configuration (warm-up and measured step counts may differ).
SPREAD_KEYS = ("size", "context_length", "batch_size", "mode", "dtype", "compile", "attention", "device")
PARTS = ("forward", "backward", "step")


def _steady_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """Measured steps that follow another step of the same run (warm-up or measured)."""
    measured = steps[steps["step_kind"] == "measured"]
    return measured[~((measured["warmup_steps"] == 0) & (measured["step_index"] == 0))]


def with_config_index(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with a ``config_index`` column (null where the runner wrote none)."""
    return rows if rows.empty or "config_index" in rows else rows.assign(config_index=float("nan"))


def per_run(results: ResultsSet) -> pd.DataFrame:
    """One row per run (results file × configuration): steady steps, and per part the mean (ms)
    and the coefficient of variation of its steady steps.

    Read from the per-step ``bench_steps`` rows; without them, from the ``bench`` summary rows of
    runs that had warm-up steps (their mean and std are over steady steps already).
    """
    import pandas as pd

    keys = [*SPREAD_KEYS, "warmup_steps", "config_index", RESULTS_FILE_COLUMN]
    steps = with_config_index(results.experiment_rows(BENCH_STEPS))
    if not steps.empty:
        steady = _steady_steps(steps)
        columns = [f"{part}_ms" for part in PARTS if f"{part}_ms" in steady and steady[f"{part}_ms"].notna().any()]
        grouped = steady.groupby(keys, dropna=False)[columns]
        means, stds = grouped.mean(), grouped.std()
        runs = pd.DataFrame({"steady_steps": grouped.size()})
        for column in columns:
            runs[f"{column}_mean"] = means[column]
            runs[f"{column}_std"] = stds[column]
        runs = runs.reset_index()
    else:
        summary = with_config_index(ok_rows(results.experiment_rows(BENCH)))
        if summary.empty:
            return pd.DataFrame()
        runs = summary[summary["warmup_steps"] > 0].rename(columns={"measured_steps": "steady_steps"})
    for part in PARTS:
        if f"{part}_ms_mean" in runs:
            runs[f"{part}_cv_share"] = runs[f"{part}_ms_std"] / runs[f"{part}_ms_mean"]
    return runs.reset_index(drop=True)


def by_configuration(runs: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: how many runs, the median and largest within-run CV, the smallest and
    largest run mean and their ratio (``*_between_runs_ratio``, null for a single run), per part;
    ``first_in_process``."""
    import pandas as pd

    if runs.empty:
        return pd.DataFrame()
    grouped = runs.groupby(list(SPREAD_KEYS), dropna=False)
    table = pd.DataFrame({"runs": grouped.size(),
                          "first_in_process": grouped["config_index"].min() == 0})
    for part in PARTS:
        if f"{part}_ms_mean" not in runs:
            continue
        table[f"{part}_cv_median_share"] = grouped[f"{part}_cv_share"].median()
        table[f"{part}_cv_max_share"] = grouped[f"{part}_cv_share"].max()
        table[f"{part}_run_mean_min_ms"] = grouped[f"{part}_ms_mean"].min()
        table[f"{part}_run_mean_max_ms"] = grouped[f"{part}_ms_mean"].max()
        ratio = table[f"{part}_run_mean_max_ms"] / table[f"{part}_run_mean_min_ms"]
        table[f"{part}_between_runs_ratio"] = ratio.where(table["runs"] > 1)
    return sorted_by_size(table.reset_index(), "context_length", "mode", "dtype")


def spread_table(results: ResultsSet) -> pd.DataFrame:
    """:func:`by_configuration` of :func:`per_run`: the noise band of every benchmarked configuration."""
    return by_configuration(per_run(results))


def configuration_spread(table: pd.DataFrame, **config) -> pd.Series | None:
    """The row of ``table`` whose columns equal ``config`` (e.g. ``size="small", context_length=256,
    dtype="fp32"``); None when no row or several rows match."""
    if table.empty:
        return None
    match = table
    for key, value in config.items():
        match = match[match[key] == value]
    return match.iloc[0] if len(match) == 1 else None
