"""The rendered report: every page the index lists exists, every local link and image resolves,
every question page has its table and figure, no cell is blank, ``nan`` or ``None``, and
out-of-memory configurations say ``OOM``.

Each check runs on two sites: the one the README's quick start renders (the committed example
traces and results in ``nsys_runs/``), and one from the reference traces beside the repository
with results files that the runner writes here on the CPU at tiny scale, plus a sweep table with
an out-of-memory configuration, whose numbers are known exactly.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
import pytest
from jinja2 import UndefinedError

from analysis import analyze_trace
from analysis.app.answers import report_data
from analysis.compare.diff import diff_summaries
from analysis.core.classify import CATEGORIES
from analysis.questions.records import DiffRecord, ResultsAnswer
from analysis.questions.registry import QUESTIONS
from analysis.report import render_diff, render_report
from analysis.report.render import environment
from analysis.report.svg import CATEGORY_COLORS
from analysis.report.svg_plot import Line, Panel, line_chart
from analysis.report.tables import display_table
from analysis.report.timeline import step_timeline
from tests.example_site import EXAMPLE_TRACE_FOLDERS, EXAMPLES, FIXTURE_TRACES, REFUSED

SVG = "{http://www.w3.org/2000/svg}"
BLANK_OR_MISSING = re.compile(r"\b(nan|NaN|None|null)\b")


@pytest.fixture(scope="module", params=["examples", "reference"])
def site_kind(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def site(site_kind, example_site) -> Path:
    return example_site(site_kind)


class PageParser(HTMLParser):
    """Links, image sources and table cells of one page."""

    def __init__(self):
        super().__init__()
        self.links, self.images, self.cells, self.text = [], [], [], []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.links.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(page: Path) -> PageParser:
    parser = PageParser()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def local_targets(page: Path, references: list[str]) -> list[Path]:
    return [page.parent / urlparse(ref).path for ref in references if not urlparse(ref).scheme and urlparse(ref).path]


def test_every_page_the_index_lists_exists(site):
    index = parse(site / "index.html")
    pages = [site / href for href in index.links]
    assert pages and all(page.is_file() for page in pages)
    answered = {page.stem for page in pages if page.stem.startswith("question-")}
    assert {f"question-{q}" for q in ("bench-b", "bench-c", "mp-accum", "mp-a", "mp-c", "mem-d", "attn-a",
                                      "nsys-a", "nsys-b", "nsys-c", "nsys-d", "nsys-e")} <= answered
    trace_pages = {page.stem for page in pages if page.stem.startswith("trace-")}
    assert trace_pages == {"trace-" + name.removesuffix(".sqlite") for name in FIXTURE_TRACES} or \
        len(trace_pages) == sum(len(list((EXAMPLES / folder).glob("*.sqlite.xz"))) for folder in EXAMPLE_TRACE_FOLDERS)


def test_questions_the_inputs_cannot_answer_are_listed_not_rendered(site):
    text = "".join(parse(site / "index.html").text)
    answered = {path.stem.removeprefix("question-") for path in site.glob("question-*.html")}
    for question in QUESTIONS:
        if question.id not in answered:
            assert f"{question.title}: not answered: needs" in text


def test_every_local_link_and_image_resolves(site):
    for page in site.glob("*.html"):
        parser = parse(page)
        missing = [t for t in local_targets(page, parser.links + parser.images) if not t.is_file()]
        assert not missing, f"{page.name} points at missing files: {missing}"
        stylesheet = re.search(r'href="([^"]+\.css)"', page.read_text()).group(1)
        assert (page.parent / stylesheet).is_file()


def test_every_question_page_has_its_table_and_figure(site):
    pages = sorted(site.glob("question-*.html"))
    assert len(pages) >= 12
    for page in pages:
        parser = parse(page)
        assert parser.images, f"{page.name} has no figure"
        assert "<table" in page.read_text(), f"{page.name} has no table"
        assert "Answer" in parser.text


def test_no_cell_is_blank_nan_or_none(site):
    for page in site.glob("*.html"):
        parser = parse(page)
        assert all(parser.cells), f"{page.name} has an empty table cell"
        found = BLANK_OR_MISSING.findall("".join(parser.text))
        assert not found, f"{page.name} shows {set(found)}"
    for page in site.glob("*.md"):
        assert not BLANK_OR_MISSING.findall(page.read_text()), page.name
        assert "||" not in page.read_text().replace("\\|", ""), f"{page.name} has an empty Markdown cell"


def test_out_of_memory_configurations_say_oom(site, site_kind):
    """The reference sweep table has one OOM row; the committed sweep on 139 GiB had none."""
    index = parse(site / "index.html")
    assert ("OOM" in index.cells) == (site_kind == "reference")


def test_trace_pages_show_phases_and_a_step_timeline(site, site_kind):
    parser = parse(site / "trace-small_ctx128_train_fp32.html")
    assert any(src.endswith("-timeline.svg") for src in parser.images)
    assert {"forward", "backward", "optimizer_step"} <= set(parser.cells)
    if site_kind == "reference":
        assert "1,463" in parser.cells  # kernels per backward pass, launched from autograd's thread


def test_index_names_gpu_nsys_version_and_refused_traces(site):
    text = " ".join(parse(site / "index.html").text)
    assert "NVIDIA H200" in text and "2025.3.2.0" in text
    assert REFUSED["trace"] in text and REFUSED["error"] in text


def test_markdown_pages_carry_tables_and_their_figures(site):
    pages = sorted(site.glob("question-*.md"))
    assert len(pages) == len(list(site.glob("question-*.html")))
    for page in pages:
        text = page.read_text()
        assert re.search(r"^\|(-{3}:?\|)+$", text, re.MULTILINE), f"{page.name} has no table"
        figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
        assert figures and all((site / f).is_file() for f in figures)


def test_diff_page_of_two_traces(tmp_path, fixture_trace):
    paths = [fixture_trace(name) for name in FIXTURE_TRACES[:2]]
    a, b = analyze_trace(paths[0]), analyze_trace(paths[1])
    page = render_diff(DiffRecord(a, b, "", diff_summaries(a, b)), tmp_path)
    parser = parse(page)
    assert all(t.is_file() for t in local_targets(page, parser.images + ["style.css"]))
    assert parser.images and "Why it got" in page.read_text()
    assert not BLANK_OR_MISSING.findall("".join(parser.text))


def test_without_inputs_every_question_is_listed_as_not_answered(tmp_path):
    render_report(report_data([], None), [], tmp_path, formats=("html",))
    text = "".join(parse(tmp_path / "index.html").text)
    assert not list(tmp_path.glob("question-*"))
    assert text.count("not answered: needs") == sum(len(q.editions) for q in QUESTIONS)  # once per edition asking it


def test_templates_fail_on_a_missing_value():
    with pytest.raises(UndefinedError):
        environment().from_string("{{ missing }}").render()


def test_pairs_that_differ_in_one_setting_get_a_linked_diff_page(tmp_path, fixture_trace):
    path = fixture_trace(FIXTURE_TRACES[0])
    fp32 = analyze_trace(path)
    bf16 = {**fp32, "trace": "small_ctx128_train_bf16.sqlite", "config": {**fp32["config"], "dtype": "bf16"}}
    other_size = {**fp32, "trace": "medium_ctx128_train_bf16.sqlite", "config": {**bf16["config"], "size": "medium"}}
    render_report(report_data([bf16, other_size, fp32], None), [], tmp_path, formats=("html",))
    index = parse(tmp_path / "index.html")
    diffs = [href for href in index.links if href.startswith("diff-")]
    assert diffs == ["diff-small_ctx128_train_fp32--small_ctx128_train_bf16.html"]
    assert "dtype: fp32 → bf16" in "".join(index.text)
    page = parse(tmp_path / diffs[0])
    assert page.images and all(t.is_file() for t in local_targets(tmp_path / diffs[0], page.images))


def test_a_speedup_column_says_speedup_in_its_header():
    shown = display_table("t", pd.DataFrame({"forward_speedup": [2.0], "speedup": [1.5], "bf16_over_fp32_ratio": [0.5]}))
    assert shown.columns == ["forward speedup (×)", "speedup (×)", "bf16 over fp32 (×)"]
    assert shown.rows == [["2", "1.50", "0.500"]]  # a bare name formats like its suffixed twin


def test_a_log_axis_within_one_decade_still_has_labelled_ticks():
    svg = ET.fromstring(line_chart([Panel([Line("", [0, 1, 2], [60.0, 200.0, 550.0], "#000000")], "x", "y", y_log=True)], "t"))
    assert {"100", "200", "500"} <= {t.text for t in svg.iter(f"{SVG}text")}


def test_short_text_cells_stay_on_one_line():
    shown = display_table("t", pd.DataFrame({"mode": ["forward-backward"], "stack": ["model.py:31 in forward <- " * 3],
                                             "step_ms": [1.0]}))
    assert shown.short == [True, False, False]
    html = str(environment().get_template("macros.html").module.table(shown))
    assert '<td class="short">forward-backward</td>' in html and '<td class="num">1</td>' in html


def test_every_cell_of_a_column_has_the_same_decimals():
    shown = display_table("t", pd.DataFrame({"ratio": [1.0, 1.001, 0.95], "forward_ms_mean": [0.43, 12.5, 120.0],
                                             "forward_ms_std": [0.0495, 0.2, 3.1], "calls_per_pass": [192.0, 97.0, 1.0],
                                             "busy_ms": [250.0, 0.004, 3.5]}))
    ratio, forward, calls, busy = zip(*shown.rows)
    assert ratio == ("1.00", "1.00", "0.95")  # three figures of the largest: no "1" beside "1.001"
    assert forward == ("0.43 ± 0.05", "12.50 ± 0.20", "120.00 ± 3.10")  # mean and std alike
    assert calls == ("192", "97", "1")
    assert busy == ("250.00", "<0.01", "3.50")  # a non-zero value never reads as zero
    delta = display_table("t", pd.DataFrame({"delta_ms": [-9.6576, 0.0001, 11.333, -0.0002]})).rows
    assert [row[0] for row in delta] == ["−9.658", "<0.001", "11.333", ">−0.001"]  # at most three decimals


def test_a_short_label_shows_its_full_name_on_hover_after_the_numbers():
    demangled = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3> >(int, T2, T3)"
    frame = pd.DataFrame({"kernel": ["elementwise MulFunctor<float> (vectorized 4)"], "kernel_full": [demangled],
                          "category": ["elementwise"], "ms_per_pass": [1.25]})
    shown = display_table("t", frame)
    assert shown.columns == ["category", "time (ms per pass)", "kernel"]  # kernel_full is no column of its own
    assert shown.full == [["", "", demangled]]
    html = str(environment().get_template("macros.html").module.table(shown))
    assert 'title="void at::native::vectorized_elementwise_kernel&lt;4' in html
    assert "kernel_full" not in html


def test_every_kernel_category_has_one_colour_in_every_figure():
    assert set(CATEGORY_COLORS) == set(CATEGORIES)
    assert len(set(CATEGORY_COLORS.values())) == len(CATEGORIES)
    svg = ET.fromstring(step_timeline({"title": "step_0", "duration_ms": 2.0,
                                       "bars": {"stream": [7], "category": ["gemm"], "start_ms": [0.0], "dur_ms": [1.0]},
                                       "phases": {"phase": ["forward"], "start_ms": [0.0], "dur_ms": [2.0]}}))
    gemm_bars = [r for r in svg.iter(f"{SVG}rect") if (r.findtext(f"{SVG}title") or "").startswith("gemm: ")]
    assert gemm_bars and gemm_bars[0].get("fill") == CATEGORY_COLORS["gemm"]
    assert "forward" in [t.text for t in svg.iter(f"{SVG}text")]  # the phase is named inside its range, no legend entry


def test_a_table_of_many_columns_is_set_dense():
    few = display_table("t", pd.DataFrame({f"c{i}_ms": [1.0] for i in range(3)}))
    many = display_table("t", pd.DataFrame({f"c{i}_ms": [1.0] for i in range(13)}))
    html = str(environment().get_template("macros.html").module.table(many))
    assert not few.dense and many.dense and '<table class="dense">' in html


def test_a_download_table_is_a_csv_beside_the_page(tmp_path):
    from analysis.questions.records import QuestionRecord
    from analysis.questions.registry import question
    from analysis.report.render import question_content
    timeline = pd.DataFrame({"time_ms": [0.0, 1.5], "allocated_bytes": [1, 2]})
    page = QuestionRecord(question("mem-a").card, ResultsAnswer("mem-a", "", {}, (), downloads={"Timeline": timeline}))
    _, files = question_content(page, tmp_path)
    assert [(f.path, f.title) for f in files] == [("question-mem-a-data1.csv", "Timeline")]
    assert pd.read_csv(tmp_path / files[0].path).equals(timeline)


def test_a_long_table_shows_its_first_rows_and_links_all_of_them_as_csv(tmp_path):
    from analysis.questions.records import QuestionRecord
    from analysis.questions.registry import question
    from analysis.report.render import MAX_TABLE_ROWS, question_content
    long = pd.DataFrame({"row": range(MAX_TABLE_ROWS + 5)})
    page = QuestionRecord(question("mem-a").card, ResultsAnswer("mem-a", "", {"Rows": long}, ()))
    tables, files = question_content(page, tmp_path)
    assert len(tables[0].rows) == MAX_TABLE_ROWS and f"of {MAX_TABLE_ROWS + 5} rows" in tables[0].title
    assert [f.title for f in files] == [f"Rows: all {MAX_TABLE_ROWS + 5} rows"]
    assert pd.read_csv(tmp_path / files[0].path).equals(long)


def test_a_trace_page_with_gradient_accumulation_counts_steps_not_passes(tmp_path):
    path = Path(__file__).parent / "data" / "foreign" / "llama_accum_nvtx.sqlite.xz"
    summary = analyze_trace(path)
    render_report(report_data([summary], None), [], tmp_path, formats=("html",))
    parser = parse(next(tmp_path.glob("trace-*.html")))
    label = parser.text.index("measured steps")
    assert parser.text[label + 1] == str(summary["measured_passes"])  # the value follows its label
    assert "measured passes" not in parser.text
    assert summary["measured_passes_by_phase"]["forward"] > summary["measured_passes"]  # several passes a step
