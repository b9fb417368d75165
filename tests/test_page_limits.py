"""The answer first, and no wall of text: on the report `make report` renders, every question page
opens with a lead of at most 100 words in at most three sentences, no page runs past 4,000 words,
no table past 80 rows, and every question page that reads traces links their trace pages."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from analysis.core.text import LEAD_SENTENCES, LEAD_WORDS, SENTENCE_END
from analysis.report.render import MAX_TABLE_ROWS

MAX_PAGE_WORDS = 4000
TAG = re.compile(r"<[^>]+>")


def _text(fragment: str) -> str:
    return html.unescape(TAG.sub(" ", fragment))


@pytest.fixture(scope="module")
def site(example_site) -> Path:
    return example_site("examples")


def test_every_question_page_leads_with_a_short_answer(site):
    for page in sorted(site.glob("question-*.html")):
        answer = re.search(r'<div class="answer">.*?<p>(.*?)</p>', page.read_text(), re.S)
        lead = " ".join(_text(answer.group(1)).split())
        assert len(lead.split()) <= LEAD_WORDS, (page.name, len(lead.split()), lead)
        assert len(SENTENCE_END.split(lead)) <= LEAD_SENTENCES, (page.name, lead)


def test_no_page_is_a_wall(site):
    for page in sorted(site.glob("*.html")):
        text = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", page.read_text(), flags=re.S)
        assert len(_text(text).split()) <= MAX_PAGE_WORDS, page.name
        rows = [len(re.findall(r"<tr", body)) for body in re.findall(r"<tbody>.*?</tbody>", text, re.S)]
        assert max(rows, default=0) <= MAX_TABLE_ROWS, page.name


def test_question_pages_link_the_trace_pages_they_summarize(site):
    page = (site / "question-nsys-c.html").read_text()
    assert 'href="trace-small_ctx128_train_fp32.html"' in page
    assert 'href="trace-medium_ctx256_train_fp32.html"' in page  # the one-GPU run is linked, not only its DDP twin
    index = (site / "index.html").read_text()
    assert 'href="trace-medium_ctx256_train_fp32.html">63.3 ms</a>' in index  # the one-GPU grid cell
