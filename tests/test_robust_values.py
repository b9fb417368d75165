"""Robustness, group 2: odd values in config marks, timings.json and results files."""
from __future__ import annotations

import pytest

from tests.robust_cases import GROUP_2, assert_clean, params

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_2, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)


def test_a_question_or_page_that_fails_says_why_and_the_rest_goes_on(tmp_path):
    from analysis.app.answers import _answered
    from analysis.questions.records import Unanswered
    from analysis.report.html import _page

    class Broken:
        id = "bench-b"

        def answer(self, evidence):
            raise ValueError("an odd value")

    result = _answered(Broken(), evidence=None)
    assert isinstance(result, Unanswered) and "ValueError: an odd value" in result.needs
    page = _page(tmp_path / "trace-x.html", lambda: str(1 / 0))
    assert "could not be made: ZeroDivisionError" in page.read_text()


def test_results_rows_keep_their_good_values_and_name_the_bad_ones(tmp_path):
    import json

    from analysis.questions.shared.results_files import read_results_dir

    rows = [{"size": "small", "step_ms_mean": 10.0}, {"size": "medium", "step_ms_mean": "fast"}, ["not", "a", "row"]]
    (tmp_path / "bench.json").write_text(json.dumps({"experiment": "bench", "rows": rows}))
    results = read_results_dir(tmp_path)
    assert results.documents["bench.json"]["rows"] == [{"size": "small", "step_ms_mean": 10.0},
                                                       {"size": "medium", "step_ms_mean": None}]
    assert results.problems == ("bench.json: 1 rows are not JSON objects; left out",
                                'bench.json: row 1 has step_ms_mean = "fast", not a number; left out')
