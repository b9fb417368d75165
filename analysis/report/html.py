"""The HTML site: index, one page per answered question, one per trace, one per diff pair.

Pages are flat files in the output folder with relative links, figures under ``figures/`` and
the stylesheet beside them, so the site opens from the file system.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from markupsafe import escape

from analysis.core.safe_write import write_file
from analysis.questions.records import DiffRecord
from analysis.report.drawing import FigureFile, FigureNotDrawn, draw_all, shown
from analysis.report.render import (
    diff_content,
    diff_figures,
    environment,
    question_content,
    question_traces,
    ranks_key,
    templates_dir,
    trace_tables,
)
from analysis.report.site import DiffPage, Site, diff_page

STYLESHEET = "style.css"


def _write(path: Path, text: str) -> Path:
    return write_file(path, text, root=path.parent)


def _page(path: Path, render: Callable[[], str]) -> Path:
    """Write the page ``render()`` makes; a page that cannot be made says why in its place, so the
    rest of the site is still written (and its links lead somewhere)."""
    try:
        text = render()
    except Exception as err:  # noqa: BLE001 - one page's defect must not cost the site
        text = (f"<!doctype html><meta charset=utf-8><title>{escape(path.stem)}</title>"
                f"<p>This page could not be made: {escape(type(err).__name__)}: {escape(str(err))}</p>"
                "<p><a href=\"index.html\">Back to the report</a></p>\n")
    return _write(path, text)


def _copy_stylesheet(out_dir: Path) -> None:
    write_file(out_dir / STYLESHEET, (templates_dir() / STYLESHEET).read_bytes(), root=out_dir)


def render_site(site: Site, out_dir: Path, figures: dict[str, list[FigureFile]]) -> Path:
    """Write every page of ``site`` into ``out_dir`` (``figures``: page name -> its figures,
    already drawn there); return the index's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _copy_stylesheet(out_dir)
    env = environment()
    for page in site.questions:
        _page(out_dir / f"{page.card.page}.html", lambda: _question_page(page, site, out_dir, figures[page.card.page]))
    for page in site.traces:
        diffs = [d for d in site.diffs if page.summary in (d.a, d.b)]
        _page(out_dir / f"{page.page}.html", lambda: env.get_template("trace.html").render(
            page=page, tables=trace_tables(page.summary), figures=shown(figures[page.page]),
            communication_figures=shown(figures[ranks_key(page)]),
            has_timeline=bool(page.summary.get("timeline")), diffs=diffs, answered={q.card.id for q in site.questions},
            home=True))
    for page in site.diffs:
        _render_diff_page(page, out_dir, figures[page.page], home=True)
    return _write(out_dir / "index.html", env.get_template("index.html").render(site=site, home=False))


def _question_page(page, site: Site, out_dir: Path, figure_files: list[FigureFile | FigureNotDrawn]) -> str:
    """A question page: its lead, the evidence, figure, tables, CSV files and the trace pages it summarizes."""
    tables, downloads = question_content(page, out_dir)
    return environment().get_template("question.html").render(
        page=page, tables=tables, figures=shown(figure_files), downloads=downloads,
        traces=question_traces(page, site), home=True)


def _render_diff_page(page: DiffPage, out_dir: Path, figure_files: list[FigureFile | FigureNotDrawn],
                      home: bool) -> Path:
    def render() -> str:
        diff, tables = diff_content(page)
        return environment().get_template("diff.html").render(page=page, diff=diff, tables=tables,
                                                              figures=shown(figure_files), home=home)
    return _page(out_dir / f"{page.page}.html", render)


def render_diff(record: DiffRecord, out_dir: Path) -> Path:
    """The diff page of two traces (with its stylesheet), for ``analyze-nsys diff A B``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _copy_stylesheet(out_dir)
    page = DiffPage(record, diff_page(record.a, record.b))
    return _render_diff_page(page, out_dir, draw_all(diff_figures(page), out_dir), home=False)
