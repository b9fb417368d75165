"""What the cross-trace nsys answers share: one table row per trace from its summary's per-trace
record, value spans for the sentences, and the rule that a single trace keeps its own sentence."""
from __future__ import annotations

import pandas as pd

from analysis.text import kernel_cell  # noqa: F401  (the table cell of a kernel name)
from analysis.records import ResultsAnswer
from analysis.runs import run_label

ANSWER_COLUMN = "trace_answer"  # the per-trace sentence, carried until the table is final
SINGLE_TRACE_ANSWER = "single_trace_answer"  # key of ``numbers`` when one trace answers alone


def rows(summaries: list[dict], key: str, keys: tuple[str, ...], present: str) -> pd.DataFrame:
    """One row per summary whose record ``questions[key]`` has ``present`` set: the run's label,
    ``keys``, and the per-trace sentence."""
    found = []
    for summary in summaries:
        record = summary["questions"][key]
        if record.get(present) is None:
            continue
        found.append({"trace": run_label(summary), **{k: record.get(k) for k in keys}, ANSWER_COLUMN: record["answer"]})
    table = pd.DataFrame(found)
    return table.dropna(axis="columns", how="all") if not table.empty else table


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
    tables = {title: table.drop(columns=ANSWER_COLUMN, errors="ignore") for title, table in tables.items()}
    return ResultsAnswer(question, "", tables, tuple(s["trace"] for s in summaries), numbers)


def first_table(record: ResultsAnswer) -> pd.DataFrame:
    return next(iter(record.tables.values()))


def grid_writer(grid_text):
    """A ``write``: the single trace's own sentence, else ``grid_text(record)`` over the grid."""
    def write(record: ResultsAnswer) -> str:
        return record.numbers.get(SINGLE_TRACE_ANSWER) or grid_text(record)
    return write
