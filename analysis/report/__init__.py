"""The render layer: the HTML site, the Markdown pages and the diff page of the report.

``render_html`` / ``render_markdown`` (summaries, failures, out_dir, results_dir) and
``render_diff`` (summary_a, summary_b, out_dir) are what ``analyze-nsys`` calls.
"""
from analysis.report.html import render_diff, render_html
from analysis.report.markdown import render_markdown

__all__ = ["render_diff", "render_html", "render_markdown"]
