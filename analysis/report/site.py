"""What the report holds, before any rendering: the run grid, the question pages that the inputs
answer (and those they cannot), one page per trace and the pairs of traces worth a diff page.

Both the HTML and the Markdown renderers draw from one :class:`Site`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from analysis.core.runs import config_value, group_order, run_group, run_label, size_order, summary_stem
from analysis.questions.records import DiffRecord, QuestionRecord, ReportData

# What makes two runs of one size and context length unlike: each combination gets its own grid,
# so a multi-GPU run never sits in a one-GPU cell.
GRID_GROUP_KEYS = ("handout", "mode", "dtype", "compile", "attention", "parallel", "world_size")
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(text: str) -> str:
    """A file-system-safe page stem."""
    return SAFE_NAME.sub("_", text)


@dataclass(frozen=True)
class Edition:
    """The questions of one handout edition: answered pages and those the inputs cannot answer."""

    name: str
    questions: list[QuestionRecord]  # answered: each gets a page
    not_answered: list[QuestionRecord]


@dataclass(frozen=True)
class TracePage:
    summary: dict
    label: str
    page: str


@dataclass(frozen=True)
class DiffPage:
    record: DiffRecord
    page: str

    @property
    def a(self) -> dict:
        return self.record.a

    @property
    def b(self) -> dict:
        return self.record.b

    @property
    def changed(self) -> str:
        return self.record.changed


@dataclass(frozen=True)
class GridCell:
    text: str
    page: str | None = None  # the trace page the cell links to


@dataclass(frozen=True)
class RunGrid:
    """Sizes × context lengths of one mode/dtype/compile/attention group."""

    title: str
    context_lengths: list[int]
    rows: list[tuple[str, list[GridCell]]]


@dataclass
class Site:
    editions: list[Edition]
    traces: list[TracePage]
    diffs: list[DiffPage]
    grids: list[RunGrid]
    failures: list[dict]
    gpus: list[str]
    nsys_versions: list[str]
    results_files: list[str]

    @property
    def trace_groups(self) -> list[tuple[str, list[TracePage]]]:
        """The trace pages by like-for-like group (:func:`~analysis.core.runs.run_group`):
        one-GPU groups first, each multi-GPU mode apart, traces without the runner's config last."""
        groups: dict[str, list[TracePage]] = {}
        for trace in self.traces:
            groups.setdefault(run_group(trace.summary), []).append(trace)
        order = group_order(pd.Series(list(groups), dtype=object))
        return [(name, groups[name]) for _, name in sorted(zip(order, groups), key=lambda pair: pair[0])]

    @property
    def questions(self) -> list[QuestionRecord]:
        """Every answered question page, over all editions."""
        return [page for edition in self.editions for page in edition.questions]


def trace_page(summary: dict) -> str:
    return f"trace-{page_name(summary_stem(summary))}"


def diff_page(a: dict, b: dict) -> str:
    return f"diff-{page_name(summary_stem(a))}--{page_name(summary_stem(b))}"


def _config_key(config: dict, keys: tuple[str, ...]) -> tuple:
    """The config's values of ``keys``; a missing value (None, or NaN in a sweep table row) is None."""
    return tuple((k, None if pd.isna(value := config_value(config, k)) else value) for k in keys)


def run_grids(summaries: list[dict], sweep: pd.DataFrame) -> list[RunGrid]:
    """One grid per mode/dtype/compile/attention: a cell links the trace, or says OOM / failed, or
    (a configuration of the sweep table whose trace is not among the inputs) gives the sweep's
    nsys forward time without a link."""
    cells: dict[tuple, dict[tuple[str, int], GridCell]] = {}
    for row in sweep.to_dict("records"):
        forward = row.get("nsys_forward_ms")
        if row.get("emit_nvtx") is True:  # per-op ranges slow the step: not a grid measurement
            continue
        if row.get("status") != "ok":
            cell = GridCell(str(row["status"]))
        elif forward is not None and not pd.isna(forward):
            cell = GridCell(f"{forward:.1f} ms")
        else:
            continue
        group = _config_key(row, GRID_GROUP_KEYS)
        cells.setdefault(group, {})[(row["size"], int(row["context_length"]))] = cell
    for summary in summaries:
        config = summary.get("config") or {}
        if not {"size", "context_length", "mode"} <= set(config):
            continue
        forward = summary["phases"].get("forward", {}).get("cpu_span_ms_per_pass")
        text = f"{forward:.1f} ms" if forward is not None else "trace"
        group = _config_key(config, GRID_GROUP_KEYS)
        cells.setdefault(group, {})[(config["size"], int(config["context_length"]))] = GridCell(text, trace_page(summary))
    grids = []
    for group in sorted(cells, key=lambda g: (dict(g)["parallel"] is not None, tuple(str(v) for _, v in g))):
        by_cell = cells[group]
        sizes = sorted({s for s, _ in by_cell}, key=lambda s: size_order(pd.Series([s])).iloc[0])
        contexts = sorted({c for _, c in by_cell})
        rows = [(size, [by_cell.get((size, c), GridCell("not run")) for c in contexts]) for size in sizes]
        values = dict(group)
        grids.append(RunGrid(_grid_title(values), contexts, rows))
    return grids


def _grid_title(values: dict) -> str:
    """``2025 handout: train, fp32, compiled`` for one GPU; a multi-GPU grid names its mode and GPUs."""
    title = f"{values['handout']} handout: {values['mode']}, {values['dtype']}" + (", compiled" if values["compile"] else "") \
        + (f", {values['attention']} attention" if values["attention"] != "naive" else "")
    if values["parallel"]:
        title += f", {values['parallel']} on {values['world_size'] or 'several'} GPUs"
    return title


def editions(data: ReportData) -> list[Edition]:
    """The question records grouped by handout edition (in order of first appearance)."""
    names = list(dict.fromkeys(edition for record in data.questions for edition in record.card.editions))
    grouped = []
    for name in names:
        records = [r for r in data.questions if name in r.card.editions]
        grouped.append(Edition(name, [r for r in records if r.answered], [r for r in records if not r.answered]))
    return grouped


def build_site(data: ReportData, failures: list[dict]) -> Site:
    """Lay out the pages of the report from the analysis' records."""
    summaries = data.summaries
    return Site(
        editions=editions(data),
        traces=[TracePage(s, run_label(s), trace_page(s)) for s in summaries],
        diffs=[DiffPage(record, diff_page(record.a, record.b)) for record in data.diffs],
        grids=run_grids(summaries, data.sweep),
        failures=failures,
        gpus=sorted({s["gpu"] for s in summaries if s.get("gpu")} | set(data.results_gpus)),
        nsys_versions=sorted({s["nsys_version"] for s in summaries if s.get("nsys_version")}),
        results_files=list(data.results_files),
    )
