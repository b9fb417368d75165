"""The render layer: the HTML site, the Markdown pages and the diff page of the report.

``render_report`` is what ``analyze-nsys`` calls: it builds the site (the results-file answers,
the run grid, the pages) and draws the question figures once for every format asked for;
``render_diff`` renders the page of two traces.
"""
from __future__ import annotations

from pathlib import Path

from analysis.report.html import render_diff, render_site
from analysis.report.markdown import write_markdown
from analysis.report.render import all_question_figures
from analysis.report.site import build_site

WRITERS = {"html": render_site, "md": write_markdown}


def render_report(summaries: list[dict], failures: list[dict], out_dir: Path, results_dir: Path | None,
                  trace_paths: dict[str, Path] | None = None, formats: tuple[str, ...] = ("html", "md")
                  ) -> dict[str, Path]:
    """Render the report in ``formats`` (``html``, ``md``) into ``out_dir``; ``trace_paths``
    (trace file name -> path) enables step timelines. Returns format -> index path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    site = build_site(summaries, failures, results_dir, trace_paths)
    figures = all_question_figures(site, out_dir)
    return {name: WRITERS[name](site, out_dir, figures) for name in formats}


__all__ = ["render_diff", "render_report"]
