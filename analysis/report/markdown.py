"""Markdown pages: each answered question as its answer text and Markdown tables, with its
figure saved beside it under ``figures/``, ready to paste into a writeup; plus an index."""
from __future__ import annotations

from pathlib import Path

from analysis.core.safe_write import write_file
from analysis.report.drawing import FigureFile, FigureNotDrawn, shown
from analysis.report.markdown_text import markdown_value
from analysis.report.render import environment, question_content
from analysis.report.site import Site


def write_markdown(site: Site, out_dir: Path, figures: dict[str, list[FigureFile | FigureNotDrawn]]) -> Path:
    """Write ``index.md`` and one ``question-<id>.md`` per answered question (``figures``: page
    name -> its figures, already drawn in ``out_dir``); return the index's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env = environment(markdown=True)
    for page in site.questions:
        tables, downloads = question_content(page, out_dir)
        try:
            text = env.get_template("question.md.j2").render(page=page, tables=tables,
                                                             figures=shown(figures[page.card.page]), downloads=downloads)
        except FigureNotDrawn as err:  # the page says why; the other pages are still written
            text = f"# {markdown_value(page.card.title)}\n\nThis page could not be made: {markdown_value(str(err))}\n"
        write_file(out_dir / f"{page.card.page}.md", text, root=out_dir)
    return write_file(out_dir / "index.md", env.get_template("index.md.j2").render(site=site), root=out_dir)
