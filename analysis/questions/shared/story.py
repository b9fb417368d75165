"""Facts several answers explain their numbers with: how launch-bound a traced phase is, what the
profiler itself adds to a run, and the unprofiled benchmark's time of the same configuration.

- **Launch-bound share** of a traced phase: its GPU idle time over its GPU span (first kernel
  start to last kernel end), per pass, from the summary's per-phase figures. Where the GPU waits
  for launches that much, the phase's time follows the CPU launch path, not the kernels.
- **Profiler overhead**: the runner's ``overhead`` experiment run twice with the same settings,
  once as a plain process and once under ``nsys profile`` (a results file whose name holds
  ``nsys``); the medians of the un-annotated steps of the two runs, paired by configuration.
- **Unprofiled forward**: the ``bench`` results' forward mean of a configuration, over every run
  with warm-up steps (a run without warm-up carries its first step's one-off cost in its mean).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.core.runs import run_label
from analysis.questions.shared.results_files import RESULTS_FILE_COLUMN, ResultsSet, ok_rows, sorted_by_size
from cs336_profile.contract import BENCH, OVERHEAD

if TYPE_CHECKING:
    import pandas as pd

# A phase whose GPU sits idle for this share of its span or more is launch-bound: a quarter of
# the time without a kernel running means the span measures the host's launch path as much as
# the GPU's work.
LAUNCH_BOUND_IDLE_SHARE = 0.25
# A results file of the ``overhead`` experiment whose name holds this was run under nsys.
UNDER_NSYS_MARK = "nsys"
CONFIG_KEYS = ("size", "context_length", "mode", "dtype", "compile")
BENCH_KEYS = ("size", "context_length", "dtype", "compile", "attention")


def idle_share(summary: dict, phase: str = "forward") -> float | None:
    """The phase's GPU idle time over its GPU span, per pass; None without that phase or span."""
    figures = (summary.get("phases") or {}).get(phase)
    if not figures or not figures.get("gpu_span_ms_per_pass"):
        return None
    return figures["idle_ms_per_pass"] / figures["gpu_span_ms_per_pass"]


def launch_bound(summaries: list[dict], phase: str = "forward") -> pd.DataFrame:
    """One row per summary with the phase: ``trace``, ``kernel_ms_per_pass``,
    ``gpu_span_ms_per_pass``, ``idle_ms_per_pass``, ``idle_share`` and ``launch_bound``
    (idle share at or above :data:`LAUNCH_BOUND_IDLE_SHARE`)."""
    import pandas as pd

    rows = []
    for summary in summaries:
        share = idle_share(summary, phase)
        if share is None:
            continue
        figures = summary["phases"][phase]
        rows.append({"trace": run_label(summary), "kernel_ms_per_pass": figures["kernel_ms_per_pass"],
                     "gpu_span_ms_per_pass": figures["gpu_span_ms_per_pass"],
                     "idle_ms_per_pass": figures["idle_ms_per_pass"], "idle_share": share,
                     "launch_bound": share >= LAUNCH_BOUND_IDLE_SHARE})
    return pd.DataFrame(rows)


def profiler_overhead(results: ResultsSet) -> pd.DataFrame:
    """Per configuration run both plain and under nsys: the median step and forward (un-annotated
    steps) of each run and what nsys adds, as ``*_added_share`` of the plain run's time."""
    import pandas as pd

    rows = ok_rows(results.experiment_rows(OVERHEAD))
    if rows.empty or RESULTS_FILE_COLUMN not in rows:
        return pd.DataFrame()
    under = rows[RESULTS_FILE_COLUMN].str.contains(UNDER_NSYS_MARK)
    keys = [key for key in CONFIG_KEYS if key in rows]
    columns = {"plain_step_ms_median": "step_ms", "plain_forward_ms_median": "forward_ms"}
    plain = rows.loc[~under, keys + list(columns)].rename(columns=columns)
    profiled = rows.loc[under, keys + list(columns)].rename(columns={k: v + "_nsys" for k, v in columns.items()})
    pairs = plain.merge(profiled, on=keys)
    if pairs.empty:
        return pairs
    for part in ("step", "forward"):
        pairs[f"{part}_added_share"] = pairs[f"{part}_ms_nsys"] / pairs[f"{part}_ms"] - 1
    return sorted_by_size(pairs, "context_length")


def unprofiled_forward(results: ResultsSet) -> pd.DataFrame:
    """Per benchmarked configuration (size, context length, dtype, compile, attention): the
    forward mean's lowest and highest over the runs with warm-up steps, the number of runs, and
    the mode they ran in (the benchmark times the forward of a forward-backward step)."""
    import pandas as pd

    rows = ok_rows(results.experiment_rows(BENCH))
    if rows.empty or "forward_ms_mean" not in rows:
        return pd.DataFrame()
    rows = rows[(rows["warmup_steps"] > 0) & rows["forward_ms_mean"].notna()]
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(attention=rows["attention"].fillna("naive") if "attention" in rows else "naive")
    keys = [key for key in BENCH_KEYS if key in rows]
    table = (rows.groupby(keys, sort=False)
             .agg(bench_forward_ms_min=("forward_ms_mean", "min"), bench_forward_ms_max=("forward_ms_mean", "max"),
                  bench_runs=("forward_ms_mean", "size"), bench_mode=("mode", "first"))
             .reset_index())
    return sorted_by_size(table, "context_length")


def bench_match(bench: pd.DataFrame, config: dict) -> pd.Series | None:
    """The :func:`unprofiled_forward` row of a trace's configuration, or None."""
    if bench.empty or not config:
        return None
    wanted = {"size": config.get("size"), "context_length": config.get("context_length"),
              "dtype": config.get("dtype", "fp32"), "compile": bool(config.get("compile")),
              "attention": config.get("attention") or "naive"}
    match = bench
    for key, value in wanted.items():
        if key in match:
            match = match[match[key] == value]
    return match.iloc[0] if len(match) else None
