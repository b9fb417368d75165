"""One trace analyzed: ``stored_summary(path)`` loads it, labels its operations and summarizes it
with every per-trace question of the registry (:func:`analysis.trace.summary.summarize`: figures
only, what the results cache keeps); ``analyze_trace(path)`` is that summary with its sentences
(:func:`analysis.questions.sentences.with_sentences`). ``summary_schema()`` is the JSON schema of
what ``analyze_trace`` returns, ``stored_summary_schema()`` of the stored form. Here, above the
questions, because the summary's ``questions`` section holds their records. The loader, the
labelling and the summary are imported when a trace is analyzed, so the schemas and the sentences
(all a results-cache hit needs) come without them and pandas."""
from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING

from analysis.core.range_names import RangeNames
from analysis.load.input_cache import InputCache
from analysis.questions.registry import PER_TRACE
from analysis.questions.sentences import with_sentences
from analysis.trace.summary_schema import SHOWN, STORED, json_schema

if TYPE_CHECKING:
    from analysis.load.table_cache import TableCache

# What analyzing a trace runs: the labelling, the loader and its range filter, the summary.
ANALYSIS_MODULES = ("analysis.core.phases", "analysis.load.loader", "analysis.load.nvtx", "analysis.trace.summary")


def analysis_modules() -> tuple[ModuleType, ...]:
    """The modules of :data:`ANALYSIS_MODULES` (pandas with them), imported on the first call: a
    caller may import them under conditions of its own first (the command line, without the
    garbage collector: :func:`analysis.app.engine.imports_uncollected`)."""
    return tuple(importlib.import_module(name) for name in ANALYSIS_MODULES)


def analyze_trace(path: str | os.PathLike, names: RangeNames = RangeNames(), inputs: InputCache = InputCache(),
                  tables: TableCache | None = None) -> dict:
    """Load and analyze one trace (``names``: the range roles the user named, the rest found in the
    trace; ``inputs``: how compressed inputs are copied; ``tables``:
    where its loaded tables are kept for the next analysis, None to read the export every time):
    its summary with the sentences; raises :class:`analysis.load.errors.TraceError` on bad input."""
    return with_sentences(stored_summary(path, names, inputs, tables))


def stored_summary(path: str | os.PathLike, names: RangeNames = RangeNames(), inputs: InputCache = InputCache(),
                   tables: TableCache | None = None) -> dict:
    """:func:`analyze_trace` without the sentences: the summary the results cache stores."""
    phases, loader, nvtx, summary = analysis_modules()
    trace = (tables.load if tables is not None else loader.load_trace)(path, nvtx.RangeFilter(), inputs)
    loader.require_claimable_kernels(trace)
    # No question reads the trace's own tables, nor other columns of the ops than the summary's.
    labelled = phases.label_ops(trace, names, move_tables=True, columns=summary.READ_COLUMNS)
    return summary.summarize(trace, PER_TRACE, labelled)


def summary_schema() -> dict:
    """The JSON schema of a summary as :func:`analyze_trace` returns it (docs/architecture.md shows it)."""
    return json_schema({question.summary_key: question.record for question in PER_TRACE}, SHOWN)


def stored_summary_schema() -> dict:
    """The JSON schema of a stored summary (:func:`stored_summary`, what the results cache keeps)."""
    return json_schema({question.summary_key: question.record for question in PER_TRACE}, STORED)
