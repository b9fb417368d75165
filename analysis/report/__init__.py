"""The render layer: the HTML site, the Markdown pages and the diff page of the report.

``render_report`` is what ``analyze-nsys`` calls: it lays out the site from the analysis' records
(:class:`analysis.questions.records.ReportData`: summaries, question records, diffs) and draws the question
figures once for every format asked for (in worker processes, only those whose data changed); ``render_diff`` renders the page of two traces. Nothing
here opens a trace or computes an answer.
"""
from __future__ import annotations

from pathlib import Path

from analysis.questions.records import ReportData
from analysis.report.html import render_diff, render_site
from analysis.report.markdown import write_markdown
from analysis.report.render import site_figures
from analysis.report.site import build_site

WRITERS = {"html": render_site, "md": write_markdown}


def render_report(data: ReportData, failures: list[dict], out_dir: Path, formats: tuple[str, ...] = ("html", "md")
                  ) -> dict[str, Path]:
    """Render the report of ``data`` in ``formats`` (``html``, ``md``) into ``out_dir``; returns
    format -> index path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    site = build_site(data, failures)
    figures = site_figures(site, out_dir)
    return {name: WRITERS[name](site, out_dir, figures) for name in formats}


__all__ = ["render_diff", "render_report"]
