"""Markdown pages: each answered question as its answer text and Markdown tables, with its
figure saved beside it under ``figures/``, ready to paste into a writeup; plus an index."""
from __future__ import annotations

from pathlib import Path

from analysis.report.render import environment, question_figures
from analysis.report.site import build_site
from analysis.report.tables import display_table


def render_markdown(summaries: list[dict], failures: list[dict], out_dir: Path, results_dir: Path | None,
                    trace_paths: dict[str, Path] | None = None) -> Path:
    """Write ``index.md`` and one ``question-<id>.md`` per answered question; return the index's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    site = build_site(summaries, failures, results_dir, trace_paths)
    env = environment(markdown=True)
    for page in site.questions:
        tables = [display_table(title, table) for title, table in page.answer.tables.items()]
        text = env.get_template("question.md.j2").render(page=page, tables=tables,
                                                         figures=question_figures(page, out_dir))
        (out_dir / f"{page.question.page}.md").write_text(text, encoding="utf-8")
    index = out_dir / "index.md"
    index.write_text(env.get_template("index.md.j2").render(site=site), encoding="utf-8")
    return index
