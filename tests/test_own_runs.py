"""A user's own traces, made without the runner's config mark (no size, context length, mode,
dtype or model shapes): every question and the index still render, such traces form their own
group named by trace, and a multi-GPU run never shares a group with one-GPU runs."""
from __future__ import annotations

import pytest

from analysis import analyze_trace
from analysis.app.answers import report_data
from analysis.core import runs
from analysis.questions.records import Unanswered
from analysis.report import render_report

NSYS_QUESTIONS = ("nsys-a", "nsys-b", "nsys-c", "nsys-d", "nsys-e")


@pytest.fixture(scope="module")
def own_summaries(fixture_trace) -> list[dict]:
    """The fixture traces analyzed, then stripped of the runner's config as a user's program leaves them."""
    summaries = []
    for name in ("small_ctx128_train_fp32.sqlite", "small_ctx256_forward_fp32.sqlite"):
        summary = analyze_trace(fixture_trace(name))
        summaries.append(summary | {"config": None, "trace": "my_" + summary["trace"]})
    return summaries


def test_questions_answer_traces_without_a_config(own_summaries):
    records = report_data(own_summaries, None).questions
    for record in records:
        if isinstance(record.result, Unanswered):
            assert "answering failed" not in record.result.needs, (record.card.id, record.result.needs)
    nsys = {r.card.id: r.result for r in records if r.card.id in NSYS_QUESTIONS and not r.card.page_suffix}
    assert not any(isinstance(result, Unanswered) for result in nsys.values()), nsys
    for result in nsys.values():
        table = next(iter(result.tables.values()))
        assert set(table["group"]) == {runs.OWN_RUNS}
        assert set(table["trace"]) == {"my_small_ctx128_train_fp32", "my_small_ctx256_forward_fp32"}
        assert runs.OWN_RUNS in result.full_answer


def test_the_index_renders_traces_without_a_config(own_summaries, tmp_path):
    index = render_report(report_data(own_summaries, None), [], tmp_path, formats=("html",))["html"]
    page = index.read_text()
    assert "my_small_ctx128_train_fp32" in page and runs.OWN_RUNS in page


@pytest.mark.parametrize(("config", "group"), [
    (None, runs.OWN_RUNS),
    ({"size": "medium", "context_length": 256, "mode": "train", "dtype": "fp32"}, "fp32 eager"),
    ({"size": "medium", "context_length": 256, "mode": "train", "dtype": "bf16"}, "bf16"),
    ({"size": "small", "context_length": 128, "mode": "train", "dtype": "fp32", "compile": True}, "compiled"),
    ({"size": "medium", "context_length": 256, "mode": "train", "dtype": "fp32", "parallel": "ddp-naive",
      "world_size": 2}, "ddp-naive on 2 GPUs"),
])
def test_each_run_falls_in_its_like_for_like_group(config, group):
    assert runs.run_group({"trace": "t.sqlite", "config": config}) == group
