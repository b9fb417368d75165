"""What the cross-trace nsys answers share: one table row per trace from its summary's per-trace
record with its like-for-like group, value spans for the sentences, and the rule that a single
trace keeps its own sentence.

Groups never mix unlike runs: one-GPU runs by precision and compilation, each multi-GPU mode apart
(a rank waiting for another rank inside a collective is no one-GPU behaviour), and traces without
the runner's config mark (a user's own program) under :data:`OWN_RUNS`, each named by its trace.
"""
from __future__ import annotations

import pandas as pd

from analysis.records import ResultsAnswer
from analysis.runs import run_label
from analysis.text import kernel_cell  # noqa: F401  (the table cell of a kernel name)

ANSWER_COLUMN = "trace_answer"  # the per-trace sentence, carried until the table is final
SINGLE_TRACE_ANSWER = "single_trace_answer"  # key of ``numbers`` when one trace answers alone
# What the nsys questions need, as their pages say when no trace is given.
NEEDS_TRACES = "nsys traces of the runner (analyze-nsys TRACE ...)"
LEFT_OUT = "left_out"  # key of ``numbers``: traces kept out of the model-level answer, and why


OWN_RUNS = "your own runs"
ONE_GPU_GROUPS = ("fp32 eager", "bf16", "compiled")
MULTI_GPU_SUFFIX = " GPUs"  # ends the group name of a multi-GPU mode
RUNNER_KEYS = ("size", "context_length", "mode")  # what the runner's config mark always holds


def has_runner_config(summary: dict) -> bool:
    """Whether the trace carries the runner's config mark (size, context length, mode)."""
    return set(RUNNER_KEYS) <= set(summary.get("config") or {})


def is_multi_gpu(summary: dict) -> bool:
    """Whether the trace is one rank of a data-parallel run (its config names a parallel mode)."""
    return bool((summary.get("config") or {}).get("parallel"))


def run_group(summary: dict) -> str:
    """The like-for-like group of a run: :data:`OWN_RUNS` without the runner's config, a multi-GPU
    run's mode and GPU count (``ddp-naive on 2 GPUs``), else compiled or its dtype (``fp32 eager``)."""
    config = summary.get("config") or {}
    if not has_runner_config(summary):
        return OWN_RUNS
    if is_multi_gpu(summary):
        return f"{config['parallel']} on {config.get('world_size') or 'several'}{MULTI_GPU_SUFFIX}"
    if config.get("compile"):
        return "compiled"
    dtype = config.get("dtype")
    return "fp32 eager" if dtype in (None, "fp32") else str(dtype)


def is_multi_gpu_group(group: str) -> bool:
    """Whether a :func:`run_group` name is a multi-GPU mode's."""
    return group.endswith(MULTI_GPU_SUFFIX)


def group_order(groups: pd.Series) -> pd.Series:
    """Sort key of groups: the one-GPU groups in :data:`ONE_GPU_GROUPS` order, other one-GPU
    dtypes, the multi-GPU modes, then :data:`OWN_RUNS`."""
    def key(group: str) -> int:
        if group in ONE_GPU_GROUPS:
            return ONE_GPU_GROUPS.index(group)
        return len(ONE_GPU_GROUPS) + (2 if group == OWN_RUNS else 1 if is_multi_gpu_group(group) else 0)
    return groups.map(key)


def by_group(table: pd.DataFrame) -> pd.DataFrame:
    """The table's rows ordered by :func:`group_order` (stable within a group)."""
    return table.sort_values("group", key=group_order, kind="stable").reset_index(drop=True)


def rows(summaries: list[dict], key: str, keys: tuple[str, ...], present: str,
         config_keys: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per summary whose record ``questions[key]`` has ``present`` set: the run's label,
    its :func:`run_group`, the run's ``config_keys`` (None where its config lacks them), ``keys``,
    and the per-trace sentence; rows ordered by group."""
    found = []
    for summary in summaries:
        if mixed_shapes(summary):
            continue
        record = summary["questions"][key]
        if record.get(present) is None:
            continue
        config = summary.get("config") or {}
        found.append({"trace": run_label(summary), "group": run_group(summary), **{k: config.get(k) for k in config_keys},
                      **{k: record.get(k) for k in keys}, ANSWER_COLUMN: record["answer"]})
    table = pd.DataFrame(found)
    return by_group(table.dropna(axis="columns", how="all")) if not table.empty else table


def mixed_shapes(summary: dict) -> int:
    """How many shapes the trace's `forward` ranges run when more than one (a trace without step
    ranges timing several configurations), else 0: such a trace is no model's forward pass."""
    return len((summary.get("phase_shapes") or {}).get("forward") or [])


def span(values: pd.Series, fmt: str = "{:.2f}") -> str:
    """``low–high`` of a series (one value when they agree in the format)."""
    low, high = fmt.format(values.min()), fmt.format(values.max())
    return low if low == high else f"{low}–{high}"


def pct_span(values: pd.Series) -> str:
    return span(values * 100, "{:.1f}") + "%"


def finish(question: str, tables: dict[str, pd.DataFrame], summaries: list[dict]) -> ResultsAnswer:
    """The record: tables without the per-trace sentences; a single trace's sentence (labelled
    with its run) under ``numbers[SINGLE_TRACE_ANSWER]``."""
    first = next(iter(tables.values()))
    numbers = {}
    if len(first) == 1:
        numbers[SINGLE_TRACE_ANSWER] = f"{first['trace'].iloc[0]}: {first[ANSWER_COLUMN].iloc[0]}"
    left_out = [f"{run_label(s)} (its {s['measured_passes_by_phase'].get('forward', 0)} `forward` ranges run "
                f"{mixed_shapes(s)} different shapes, so it has no single forward pass; its own page gives them "
                "per shape)" for s in summaries if mixed_shapes(s)]
    if left_out:
        numbers[LEFT_OUT] = "Left out: " + "; ".join(left_out) + "."
    tables = {title: table.drop(columns=ANSWER_COLUMN, errors="ignore") for title, table in tables.items()}
    return ResultsAnswer(question, "", tables, tuple(s["trace"] for s in summaries), numbers)


def first_table(record: ResultsAnswer) -> pd.DataFrame:
    return next(iter(record.tables.values()))


def grid_writer(grid_text):
    """A ``write``: the single trace's own sentence, else ``grid_text(record)`` over the grid."""
    def write(record: ResultsAnswer) -> str:
        text = record.numbers.get(SINGLE_TRACE_ANSWER) or grid_text(record)
        return " ".join(filter(None, [text, record.numbers.get(LEFT_OUT)]))
    return write
