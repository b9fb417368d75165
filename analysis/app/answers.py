"""The cross-trace step: every question answered from the trace summaries and the results files,
the diff of each pair of runs that differ in one setting, and the run facts the report lists.
The render layer receives :class:`ReportData` and draws it; it computes nothing itself.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from analysis.compare.diff import diff_summaries
from analysis.core.runs import config_value, edition, names_edition, sorted_summaries
from analysis.questions.question import Evidence
from analysis.questions.records import DiffRecord, QuestionRecord, ReportData, Unanswered
from analysis.questions.registry import QUESTIONS
from analysis.questions.shared.results_files import RESULTS_FILE_COLUMN, ResultsSet, read_results_dir, results_edition
from cs336_profile.contract import PARALLEL_MODES

SWEEP = "sweep"
SWEEP_KEYS = ("stem", "status", "size", "context_length")  # what a grid cell of the sweep table needs
NAIVE_DDP, OVERLAPPED_DDP, _ = PARALLEL_MODES
# Settings a diff pair may differ in (exactly one of them), with the value that makes a run side A
# (the baseline); everything else must match.
DIFF_BASELINES = {"dtype": "fp32", "compile": False, "attention": "naive", "parallel": NAIVE_DDP}
# Settings whose pair must hold exactly these two values (no single-GPU or FSDP run against DDP).
DIFF_ONLY_BETWEEN = {"parallel": {NAIVE_DDP, OVERLAPPED_DDP}}
SAME_SHAPE_KEYS = ("handout", "size", "context_length", "mode", "batch_size", "world_size")


def answer_all(summaries: list[dict], results: ResultsSet) -> list[QuestionRecord]:
    """Every registered question answered from ``summaries`` and ``results``, in handout order.

    A question that several editions ask is answered once per edition, from that edition's traces
    and results files only (its later editions' pages get the edition as a suffix); a question of
    one edition reads every input."""
    records = []
    for question in QUESTIONS:
        for index, name in enumerate(question.editions):
            if len(question.editions) > 1:
                evidence = _edition_evidence(summaries, results, name)
                card = replace(question.card, editions=(name,), page_suffix=f"-{name}" if index else "")
            else:
                evidence, card = Evidence(sorted_summaries(summaries), results), question.card
            if question.per_trace is not None and not evidence.summaries:
                result = Unanswered(question.id, question.needs)
            else:
                result = _answered(question, evidence)
            records.append(QuestionRecord(card, result))
    return records


def _edition_evidence(summaries: list[dict], results: ResultsSet, name: str) -> Evidence:
    """The inputs of edition ``name``, with those of the other editions beside them. A trace of the
    user's own program names no edition (:func:`names_edition`): it is an input of every edition's
    page and never one of "the other editions"."""
    def part(keep, unnamed: bool) -> Evidence:
        return Evidence(sorted_summaries([s for s in summaries if (keep(edition(s)) if names_edition(s) else unnamed)]),
                        ResultsSet({f: d for f, d in results.documents.items() if keep(results_edition(d))}))
    return replace(part(lambda e: e == name, True), other_editions=part(lambda e: e != name, False), edition=name)


def _answered(question, evidence: Evidence):
    """The question's answer; an answer that fails on odd inputs becomes an unanswered question
    that says why, so the other pages are still made."""
    try:
        return question.answer(evidence)
    except Exception as err:  # noqa: BLE001 - one question's defect must not cost the whole report
        return Unanswered(question.id, f"inputs it can read (answering failed: {type(err).__name__}: {err})")


def diff_pairs(summaries: list[dict]) -> list[DiffRecord]:
    """Pairs of traces whose configs differ in exactly one of :data:`DIFF_BASELINES` (fp32/bf16,
    eager/compiled, naive/SDPA, naive/overlapped DDP), each with its diff; A is the baseline side."""
    with_config = [s for s in summaries if s.get("config")]
    pairs = []
    for index, a in enumerate(with_config):
        for b in with_config[index + 1:]:
            ca, cb = a["config"], b["config"]
            same_shape = all(config_value(ca, k) == config_value(cb, k) for k in SAME_SHAPE_KEYS)
            changed = [k for k in DIFF_BASELINES if config_value(ca, k) != config_value(cb, k)]
            if same_shape and len(changed) == 1 and _allowed(changed[0], ca, cb):
                key = changed[0]
                base, other = (b, a) if config_value(cb, key) == DIFF_BASELINES[key] else (a, b)
                values = [config_value(s["config"], key) for s in (base, other)]
                pairs.append(DiffRecord(base, other, f"{key}: {values[0]} → {values[1]}", diff_summaries(base, other)))
    return pairs


def _allowed(key: str, config_a: dict, config_b: dict) -> bool:
    """Whether the two values of ``key`` may make a pair (:data:`DIFF_ONLY_BETWEEN`)."""
    only = DIFF_ONLY_BETWEEN.get(key)
    return only is None or {config_value(config_a, key), config_value(config_b, key)} == only


def report_data(summaries: list[dict], results_dir: Path | None) -> ReportData:
    """Answer every question, diff every pair and gather the run facts for the report."""
    summaries = sorted_summaries(summaries)
    results = read_results_dir(results_dir)
    sweep, sweep_problems = sweep_table(results)
    gpus = {env.get("gpu_name") for doc in results.documents.values() for env in [doc.get("environment") or {}]}
    return ReportData(
        summaries=summaries,
        questions=answer_all(summaries, results),
        diffs=diff_pairs(summaries),
        sweep=sweep,
        results_gpus=sorted(g for g in gpus if g),
        results_files=sorted(results.documents),
        input_problems=[*results.problems, *sweep_problems],
    )


def sweep_table(results: ResultsSet) -> tuple[pd.DataFrame, list[str]]:
    """The sweep table's latest row per trace stem, and one line per results file whose rows lack
    a value of :data:`SWEEP_KEYS` (a number for ``context_length``): those rows are left out."""
    rows = results.experiment_rows(SWEEP)
    if rows.empty:
        return rows, []
    needed = rows.reindex(columns=list(SWEEP_KEYS))
    needed["context_length"] = pd.to_numeric(needed["context_length"], errors="coerce")
    incomplete = needed.isna().any(axis=1)
    problems = [f"{name}: {count} sweep rows lack one of {', '.join(SWEEP_KEYS)}; left out"
                for name, count in rows[incomplete][RESULTS_FILE_COLUMN].value_counts().sort_index().items()]
    return rows[~incomplete].drop_duplicates("stem", keep="last"), problems
