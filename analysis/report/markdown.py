"""Markdown pages: each answered question as its answer text and Markdown tables, with its
figure saved beside it under ``figures/``, ready to paste into a writeup; plus an index."""
from __future__ import annotations

from pathlib import Path

from analysis.safe_write import write_file
from analysis.report.render import FigureFile, environment, question_downloads
from analysis.report.site import Site
from analysis.report.tables import display_table


def write_markdown(site: Site, out_dir: Path, question_figures: dict[str, list[FigureFile]]) -> Path:
    """Write ``index.md`` and one ``question-<id>.md`` per answered question (``question_figures``:
    question id -> its figures, already drawn in ``out_dir``); return the index's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env = environment(markdown=True)
    for page in site.questions:
        tables = [display_table(title, table) for title, table in page.result.tables.items()]
        text = env.get_template("question.md.j2").render(page=page, tables=tables,
                                                         figures=question_figures[page.card.id],
                                                         downloads=question_downloads(page, out_dir))
        write_file(out_dir / f"{page.card.page}.md", text, root=out_dir)
    return write_file(out_dir / "index.md", env.get_template("index.md.j2").render(site=site), root=out_dir)
