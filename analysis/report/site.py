"""What the report holds, before any rendering: the run grid, the question pages that the inputs
answer (and those they cannot), one page per trace and the pairs of traces worth a diff page.

Both the HTML and the Markdown renderers draw from one :class:`Site`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.questions.results_files import ResultsAnswer, ResultsSet, read_results_dir, size_order
from analysis.report.catalog import QUESTIONS, Question
from analysis.report.nsys_pages import nsys_answer, run_label, sorted_summaries
from cs336_profile.contract import trace_stem

SWEEP = "sweep"
# Settings a diff pair may differ in (exactly one of them), with the value that makes a run side A
# (the baseline); everything else must match.
DIFF_BASELINES = {"dtype": "fp32", "compile": False, "attention": "naive"}
GRID_GROUP_KEYS = ("mode", "dtype", "compile", "attention")
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(text: str) -> str:
    """A file-system-safe page stem."""
    return SAFE_NAME.sub("_", text)


@dataclass(frozen=True)
class QuestionPage:
    question: Question
    answer: ResultsAnswer


@dataclass(frozen=True)
class NotAnswered:
    question: Question
    needs: str


@dataclass(frozen=True)
class TracePage:
    summary: dict
    label: str
    page: str


@dataclass(frozen=True)
class DiffPage:
    a: dict
    b: dict
    changed: str
    page: str


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
    questions: list[QuestionPage]
    not_answered: list[NotAnswered]
    traces: list[TracePage]
    diffs: list[DiffPage]
    grids: list[RunGrid]
    failures: list[dict]
    gpus: list[str]
    nsys_versions: list[str]
    results_files: list[str]
    trace_paths: dict[str, Path] = field(default_factory=dict)


def trace_page(summary: dict) -> str:
    return f"trace-{page_name(trace_stem(summary['trace']))}"


def diff_page(a: dict, b: dict) -> str:
    return f"diff-{page_name(trace_stem(a['trace']))}--{page_name(trace_stem(b['trace']))}"


def _config_key(config: dict, keys: tuple[str, ...]) -> tuple:
    return tuple((k, config.get(k) if k != "attention" else config.get(k) or "naive") for k in keys)


def diff_pairs(summaries: list[dict]) -> list[DiffPage]:
    """Pairs of traces whose configs differ in exactly one of :data:`DIFF_BASELINES` (fp32/bf16,
    eager/compiled, naive/SDPA); A is the baseline side (fp32, eager, naive attention)."""
    with_config = [s for s in summaries if s.get("config")]
    pairs = []
    for index, a in enumerate(with_config):
        for b in with_config[index + 1:]:
            ca, cb = a["config"], b["config"]
            same_shape = all(ca.get(k) == cb.get(k) for k in ("size", "context_length", "mode", "batch_size"))
            changed = [k for k in DIFF_BASELINES if _config_key(ca, (k,)) != _config_key(cb, (k,))]
            if same_shape and len(changed) == 1:
                key = changed[0]
                base, other = (b, a) if _config_key(cb, (key,)) == ((key, DIFF_BASELINES[key]),) else (a, b)
                values = [dict(_config_key(s["config"], (key,)))[key] for s in (base, other)]
                pairs.append(DiffPage(base, other, f"{key}: {values[0]} → {values[1]}", diff_page(base, other)))
    return pairs


def _sweep_statuses(results: ResultsSet) -> pd.DataFrame:
    rows = results.experiment_rows(SWEEP)
    return rows if rows.empty else rows.drop_duplicates("stem", keep="last")


def run_grids(summaries: list[dict], results: ResultsSet) -> list[RunGrid]:
    """One grid per mode/dtype/compile/attention: a cell links the trace, or says OOM / failed, or
    (a configuration of the sweep table whose trace is not among the inputs) gives the sweep's
    nsys forward time without a link."""
    cells: dict[tuple, dict[tuple[str, int], GridCell]] = {}
    sweep = _sweep_statuses(results)
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
    for group in sorted(cells, key=lambda g: tuple(str(v) for _, v in g)):
        by_cell = cells[group]
        sizes = sorted({s for s, _ in by_cell}, key=lambda s: size_order(pd.Series([s])).iloc[0])
        contexts = sorted({c for _, c in by_cell})
        rows = [(size, [by_cell.get((size, c), GridCell("not run")) for c in contexts]) for size in sizes]
        values = dict(group)
        title = f"{values['mode']}, {values['dtype']}" + (", compiled" if values["compile"] else "") \
            + (f", {values['attention']} attention" if values["attention"] != "naive" else "")
        grids.append(RunGrid(title, contexts, rows))
    return grids


def build_site(summaries: list[dict], failures: list[dict], results_dir: Path | None,
               trace_paths: dict[str, Path] | None = None) -> Site:
    """Answer every question the inputs can answer and lay out the pages."""
    summaries = sorted_summaries(summaries)
    results = read_results_dir(results_dir)
    answered, not_answered = [], []
    for question in QUESTIONS:
        if question.nsys_key:
            result = nsys_answer(question.nsys_key, summaries) if summaries else None
            needs = "nsys traces of the runner (analyze-nsys TRACE ...)"
        else:
            result = question.answer(results)
            needs = None
        if isinstance(result, ResultsAnswer):
            answered.append(QuestionPage(question, result))
        else:
            not_answered.append(NotAnswered(question, result.needs if result is not None else needs))
    return Site(
        questions=answered,
        not_answered=not_answered,
        traces=[TracePage(s, run_label(s), trace_page(s)) for s in summaries],
        diffs=diff_pairs(summaries),
        grids=run_grids(summaries, results),
        failures=failures,
        gpus=sorted({s["gpu"] for s in summaries if s.get("gpu")}
                    | {env.get("gpu_name") for doc in results.documents.values()
                       for env in [doc.get("environment") or {}] if env.get("gpu_name")}),
        nsys_versions=sorted({s["nsys_version"] for s in summaries if s.get("nsys_version")}),
        results_files=sorted(results.documents),
        trace_paths=dict(trace_paths or {}),
    )
