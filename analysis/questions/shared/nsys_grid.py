"""What the cross-trace nsys answers share: one table row per trace from its summary's per-trace
record with its like-for-like group (:func:`analysis.core.runs.run_group`: groups never mix one-GPU and
multi-GPU runs, and a user's own traces form their own), value spans for the sentences, and the
rule that a single trace keeps its own sentence."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from analysis.core import text
from analysis.core.runs import group_order, run_group, run_label
from analysis.core.text import kernel_cell  # noqa: F401  (the table cell of a kernel name)
from analysis.questions.records import ResultsAnswer
from analysis.questions.shared.trace_text import whole_graphs_shares

if TYPE_CHECKING:
    import pandas as pd

ANSWER_COLUMN = "trace_answer"  # the per-trace sentence, carried until the table is final
SINGLE_TRACE_ANSWER = "single_trace_answer"  # key of ``numbers`` when one trace answers alone
# What the nsys questions need, as their pages say when no trace is given.
NEEDS_TRACES = "nsys traces of the runner (analyze-nsys TRACE ...)"
LEFT_OUT = "left_out"  # key of ``numbers``: traces kept out of the model-level answer, and why


def by_group(table: pd.DataFrame) -> pd.DataFrame:
    """The table's rows ordered by :func:`group_order` (stable within a group)."""
    return table.sort_values("group", key=group_order, kind="stable").reset_index(drop=True)


def rows(summaries: list[dict], key: str, keys: tuple[str, ...], present: str,
         config_keys: tuple[str, ...] = (), sorts_kernels: bool = False) -> pd.DataFrame:
    """One row per summary whose record ``questions[key]`` has ``present`` set: the run's label,
    its :func:`run_group`, the run's ``config_keys`` (None where its config lacks them), ``keys``,
    and the per-trace sentence; rows ordered by group. A trace left out (:func:`left_out`) has none."""
    import pandas as pd

    found = []
    for summary in summaries:
        if left_out(summary, sorts_kernels):
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


def span(values: pd.Series, fmt: str | Callable[[float], str] = "{:.2f}") -> str:
    """``low–high`` of a series (one value when they agree in the format: a format string, or a
    function such as :func:`analysis.core.text.count`)."""
    show = fmt if callable(fmt) else fmt.format
    low, high = show(values.min()), show(values.max())
    return low if low == high else f"{low}–{high}"


def pct_span(values: pd.Series) -> str:
    return span(values * 100, "{:.1f}") + "%"


def left_out(summary: dict, sorts_kernels: bool = False) -> str | None:
    """Why a trace stays out of the answers across traces, or None: its ``forward`` ranges run
    different shapes (:func:`mixed_shapes`), or, for an answer that sorts kernels into kinds
    (``sorts_kernels``), part of its forward ran inside CUDA graphs traced whole, whose kernels
    it does not list."""
    shapes = mixed_shapes(summary)
    if shapes:
        return (f"its {summary['measured_passes_by_phase'].get('forward', 0)} `forward` ranges run "
                f"{shapes} different shapes, so it has no single forward pass; its own page gives "
                "them per shape")
    forward, _ = whole_graphs_shares(summary)
    if sorts_kernels and forward:
        return (f"{text.pct(forward)} of its forward kernel time ran inside CUDA graphs traced whole, whose kernels "
                "the trace does not list; its own page says so")
    return None


def forward_kernels_needed(summaries: list[dict]) -> str:
    """What an answer that sorts the forward's kernels into kinds needs, where no trace gave one:
    when traces were left out for CUDA graphs traced whole (:func:`left_out`), kernels listed one by one."""
    graphs = [run_label(s) for s in summaries if whole_graphs_shares(s)[0]]
    if graphs:
        return (f"a trace whose forward kernels are listed one by one ({', '.join(graphs)} ran its forward inside "
                "CUDA graphs traced whole: profile with --cuda-graph-trace=node)")
    return "a trace with kernels in measured `forward` ranges"


def finish(question: str, tables: dict[str, pd.DataFrame], summaries: list[dict],
           sorts_kernels: bool = False) -> ResultsAnswer:
    """The record: tables without the per-trace sentences; a single trace's sentence (labelled
    with its run) under ``numbers[SINGLE_TRACE_ANSWER]``; the traces left out (:func:`left_out`)
    and why under ``numbers[LEFT_OUT]``."""
    first = next(iter(tables.values()))
    numbers = {}
    if len(first) == 1:
        numbers[SINGLE_TRACE_ANSWER] = f"{first['trace'].iloc[0]}: {first[ANSWER_COLUMN].iloc[0]}"
    reasons = [f"{run_label(s)} ({why})" for s in summaries if (why := left_out(s, sorts_kernels))]
    if reasons:
        numbers[LEFT_OUT] = "Left out: " + "; ".join(reasons) + "."
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
