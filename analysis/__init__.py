"""Load nsys SQLite exports of the CS336 model and answer the profiling questions.

The package is built in floors, each importing only those below it (docs/architecture.md):
``load`` (the only code that reads nsys tables) → ``core`` (the rules) → ``trace`` (one trace's
summary) → ``questions`` → ``compare`` (diffs) → ``report`` (rendering) → ``app`` (the command
line, the cache, the engines). This module is the facade over them::

    from analysis import load_trace, analyze_trace, answer_questions, render_report

    summary = analyze_trace("run.sqlite.xz")          # one trace's summary (a JSON-ready dict)
    data = answer_questions([summary], None)          # every question answered (results folder: None)
    render_report(data, [], "report")                  # the HTML and Markdown pages

Its names are imported on first use, so ``import analysis`` stays cheap.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# name -> (module, its name there)
_FACADE = {
    "load_trace": ("analysis.load", "load_trace"),                # path -> Trace
    "analyze_trace": ("analysis.app.analyze", "analyze_trace"),   # path -> summary
    "answer_questions": ("analysis.app.answers", "report_data"),  # summaries, results folder -> ReportData
    "render_report": ("analysis.report", "render_report"),        # ReportData, failures, folder -> pages
}

__all__ = ["__version__", *_FACADE]


def __getattr__(name: str):
    if name in _FACADE:
        module, attribute = _FACADE[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FACADE})
