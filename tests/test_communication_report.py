"""Two-rank traces end to end: their summaries carry the communication section (valid against
the summary's schema), their trace pages a communication section with the per-rank timeline, and
the ddp-b page compares naive and overlapped DDP."""
from __future__ import annotations

import html

import pytest

from analysis import analyze_trace
from analysis.app.analyze import summary_schema
from analysis.app.cli import main
from analysis.trace.summary_schema import problems
from tests.synthetic import ALL_REDUCE, GEMM, build_export, rank_process

RUN = {"size": "medium", "context_length": 128, "mode": "train", "dtype": "fp32", "batch_size": 4}


def _ddp_trace(folder, parallel: str, cover: list):
    ranks = [rank_process(100, 0, 0, 0, cover, {**RUN, "parallel": parallel}),
             rank_process(200, 1, 1, 20, cover, {**RUN, "parallel": parallel})]
    return build_export(folder / f"medium_{parallel}.sqlite", ranges=ranks[0][0] + ranks[1][0],
                        marks=ranks[0][1] + ranks[1][1], kernels=ranks[0][2] + ranks[1][2],
                        strings=(GEMM, ALL_REDUCE))


@pytest.fixture
def ddp_traces(tmp_path):
    return [_ddp_trace(tmp_path, "ddp-naive", []), _ddp_trace(tmp_path, "ddp-overlap", [(500, 600)])]


def test_summary_has_a_valid_communication_section(ddp_traces):
    summary = analyze_trace(ddp_traces[1])
    assert problems(summary, summary_schema()) == []
    communication = summary["communication"]
    assert [r["rank"] for r in communication["ranks"]] == [0, 1]
    assert communication["ranks"][0]["phases"]["backward"]["exposed_communication_ms_per_pass"] == 0
    timeline = communication["timeline"]
    assert timeline["title"] == "step_0"
    assert sorted(set(zip(timeline["bars"]["rank"], timeline["bars"]["kind"]))) == [
        (0, "communication"), (0, "compute"), (1, "communication"), (1, "compute")]
    assert sorted(set(timeline["phases"]["phase"])) == ["backward", "forward"]


def test_trace_and_question_pages(ddp_traces, tmp_path):
    out = tmp_path / "report"
    assert main([*map(str, ddp_traces), "--out", str(out), "--format", "html", "--no-cache", "--jobs", "1"]) == 0
    page = (out / "trace-medium_ddp-naive.html").read_text()
    assert "Communication between ranks" in page and "trace-medium_ddp-naive-ranks.svg" in page
    assert (out / "figures" / "trace-medium_ddp-naive-ranks.svg").stat().st_size > 0
    question = html.unescape((out / "question-ddp-b.html").read_text())
    assert "Naive DDP (medium ctx128 train fp32 ddp-naive, 2 ranks)" in question
    # the backward all-reduce is hidden behind a compute kernel; the grad_sync one stays exposed
    assert "rank 0 110 µs (10 µs exposed; at least 0 µs waiting)" in question
    assert "cuts rank 0's exposed communication from 110 µs to 10 µs per step" in question
