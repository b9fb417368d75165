"""The render layer: the HTML site, the Markdown pages and the diff page of the report.

``render_report`` is what ``analyze-nsys`` calls: it lays out the site from the analysis' records
(:class:`analysis.questions.records.ReportData`: summaries, question records, diffs) and draws the question
figures once for every format asked for (in worker processes, only those whose data changed); ``render_diff`` renders the page of two traces. Nothing
here opens a trace or computes an answer. The drawing modules are imported on first use, so the
command line's one module from here (:mod:`analysis.report.structure_lines`) stays cheap.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from analysis.questions.records import ReportData

# name -> (module, its name there), imported on first use
_LAZY = {"render_diff": ("analysis.report.html", "render_diff")}


def render_report(data: ReportData, failures: list[dict], out_dir: Path, formats: tuple[str, ...] = ("html", "md")
                  ) -> dict[str, Path]:
    """Render the report of ``data`` in ``formats`` (``html``, ``md``) into ``out_dir``; returns
    format -> index path."""
    from analysis.report.html import render_site
    from analysis.report.markdown import write_markdown
    from analysis.report.render import site_figures
    from analysis.report.site import build_site

    writers = {"html": render_site, "md": write_markdown}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    site = build_site(data, failures)
    figures = site_figures(site, out_dir)
    return {name: writers[name](site, out_dir, figures) for name in formats}


def __getattr__(name: str):
    if name in _LAZY:
        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'analysis.report' has no attribute {name!r}")


__all__ = ["render_diff", "render_report"]
