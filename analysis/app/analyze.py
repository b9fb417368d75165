"""One trace analyzed: ``stored_summary(path)`` loads it, labels its operations and summarizes it
with every per-trace question of the registry (:func:`analysis.trace.summary.summarize`: figures
only, what the results cache keeps); ``analyze_trace(path)`` is that summary with its sentences
(:func:`analysis.questions.sentences.with_sentences`). ``summary_schema()`` is the JSON schema of
what ``analyze_trace`` returns, ``stored_summary_schema()`` of the stored form. Here, above the
questions, because the summary's ``questions`` section holds their records. The loader, the
labelling and the summary are imported when a trace is analyzed, so the schemas and the sentences
(all a results-cache hit needs) come without them and pandas."""
from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from analysis.core.range_names import RangeNames
from analysis.load.input_cache import InputCache, files_sha256
from analysis.load.progress import stage
from analysis.questions.registry import PER_TRACE
from analysis.questions.sentences import with_sentences
from analysis.trace.summary_schema import SHOWN, STORED, json_schema

if TYPE_CHECKING:
    from analysis.load.table_cache import Product, TableCache

# What analyzing a trace runs: the labelling, the loader and its range filter, the summary.
ANALYSIS_MODULES = ("analysis.core.phases", "analysis.load.loader", "analysis.load.nvtx", "analysis.trace.summary")
ANALYSIS_PACKAGE = Path(__file__).resolve().parents[1]
# The floors whose code makes the kept operations (ops_product), and the files of theirs hashed;
# the runner's package, whose constants (phase names, configs) the core floor imports.
OPS_CODE = ("load", "core")
OPS_CODE_FILES = ("*.py", "*.csv")
OPS_CODE_SHARED = ANALYSIS_PACKAGE.parent / "cs336_profile"


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
    """:func:`analyze_trace` without the sentences: the summary the results cache stores. With
    ``tables``, the trace's operations as the labelling reads them whatever the range names
    (:func:`analysis.core.phases.trace_ops`) are kept with its tables too (:func:`ops_product`)."""
    phases, loader, nvtx, summary = analysis_modules()
    name = Path(path).name
    if tables is None:
        trace = loader.load_trace(path, nvtx.RangeFilter(), inputs)
        loader.require_claimable_kernels(trace)
        stage(f"{name}: finding its structure")
        # No question reads the trace's own tables, nor other columns of the ops than the summary's.
        columns, launch_rows = summary.ops_read(trace.ranges, trace.kernels, trace.memops)
        labelled = phases.label_ops(trace, names, move_tables=True, columns=columns, launch_rows=launch_rows)
    else:
        trace, ops = tables.load_with(path, nvtx.RangeFilter(), inputs, ops_product())
        stage(f"{name}: finding its structure")
        columns, launch_rows = summary.ops_read(trace.ranges, ops)
        labelled = phases.label_ops(trace, names, ops=ops, columns=columns, launch_rows=launch_rows)
        del ops  # the labelled ops now: the summary keeps only the columns it reads, the rest freed
    return summary.summarize(trace, PER_TRACE, labelled)


def ops_product() -> Product:
    """The kept form of :func:`analysis.core.phases.trace_ops`: made from the trace's kernel and
    memory-operation tables (moved into it, not read again when it is served), after the check
    that some kernel has a launch call (:func:`analysis.load.loader.require_claimable_kernels`: an
    input whose product is kept passed it, under the same loader code). Keyed by
    :func:`ops_code_hash`."""
    from analysis.load.table_cache import Product

    phases, loader, _, _ = analysis_modules()

    def make(trace):
        loader.require_claimable_kernels(trace)
        stage(f"{Path(trace.path).name}: ordering its operations")
        return phases.trace_ops(trace, move=True)

    return Product(name="ops", code=ops_code_hash(), replaces=("kernels", "memops"), make=make)


@functools.cache
def ops_code_hash() -> str:
    """sha256 over the code that can make :func:`ops_product`: the floors it lives on and below
    (:data:`OPS_CODE`; the layering keeps their imports among them) and the project's shared
    constants (:data:`OPS_CODE_SHARED`). Code above them (sections, questions) reuses it."""
    files = [found for part in OPS_CODE for pattern in OPS_CODE_FILES for found in (ANALYSIS_PACKAGE / part).rglob(pattern)]
    shared = sorted(OPS_CODE_SHARED.rglob("*.py"))
    return files_sha256(ANALYSIS_PACKAGE.parent, [*sorted(files), *shared])


def summary_schema() -> dict:
    """The JSON schema of a summary as :func:`analyze_trace` returns it (docs/architecture.md shows it)."""
    return json_schema({question.summary_key: question.record for question in PER_TRACE}, SHOWN)


def stored_summary_schema() -> dict:
    """The JSON schema of a stored summary (:func:`stored_summary`, what the results cache keeps)."""
    return json_schema({question.summary_key: question.record for question in PER_TRACE}, STORED)
