"""``summarize(trace, questions)``: one loaded trace in, its stored summary out (a JSON-ready dict
of figures, the TraceSummary less its sentences, :mod:`analysis.trace.summary_schema`);
:func:`analysis.app.analyze.analyze_trace` is the same from a path, with the sentences added.

Every key is a declared :class:`~analysis.trace.section.Section` (:func:`sections`): ``summarize``
builds them in their declared order, each from the trace's
:class:`~analysis.trace.section.SummarySources` and the sections it names, and puts them in the
order of :class:`~analysis.trace.summary_schema.TraceSummary`.

Keys of the summary (stable; the report and the results database read them). "Per pass" means
a mean over the measured instances of a phase; ms are milliseconds; shares are fractions in
[0, 1]; kernel names are demangled names; every missing number is null, never NaN.

- ``schema_version`` (:data:`analysis.trace.summary_schema.SCHEMA_VERSION`; the types and the JSON
  schema of every key are in :mod:`analysis.trace.summary_schema` and docs/summary.schema.json),
  ``trace`` (file name), ``trace_sha256``, ``gpu`` (name or null), ``nsys_version``,
  ``analyzer_version``, ``notes`` (one-line caveats: loader, labelling, run record),
  ``cuda_graph_launches``.
- ``config`` (the runner's config, keys of its ``config`` mark, or null) and ``config_source``
  (``marks`` / ``timings.json`` / null); ``python_ms_per_pass`` (phase or ``step`` -> Python
  timer's mean ms) and ``python_ms_source``.
- ``structure``: the run's structure as :mod:`analysis.core.structure` found it: where it came from
  (``ranges``, ``pytorch`` labels, ``kernels``), the rules that found steps and warm-up, the
  range names behind each role, names left unused, and each step's figures.
- ``has_steps`` (the trace has steps), ``measured_passes`` (measured steps; the
  number of measured instances of the most frequent phase when there are no step ranges, 0 when
  there are no phase ranges either), ``measured_passes_by_phase``.
- ``phases``: phase -> ``passes``, ``kernels_per_pass``, ``kernel_ms_per_pass``,
  ``memop_ms_per_pass``, ``gpu_span_ms_per_pass``, ``cpu_span_ms_per_pass``,
  ``busy_ms_per_pass``, ``idle_ms_per_pass``, ``python_ms_per_pass``,
  ``by_category_ms_per_pass`` {category: ms}, ``top_kernels`` [{kernel, category, tensor_core,
  calls_per_pass, ms_per_pass, share}] (10, by time), and from the efficiency analysis
  ``model_flops_per_pass``, ``achieved_tflop_per_s``, ``mfu``, ``idle_share``
  (see :mod:`analysis.trace.phase_breakdown`, :mod:`analysis.trace.efficiency`).
- ``phase_shapes``: phase -> per shape group [{group, passes, cpu_span_ms_per_pass,
  kernel_ms_per_pass, first_cpu_span_ms}], for a trace without step ranges whose ranges of that
  phase run different shapes (empty otherwise); such a trace stays out of model-level answers.
- ``overall``: every measured kernel per measured step (``scope`` says "measured steps",
  "profiling window" or "whole capture"): ``passes``, ``kernels_per_pass``, ``kernel_ms_per_pass``,
  ``distinct_kernels``, ``tensor_core_share``, ``by_category_ms_per_pass``, ``top_kernels``
  (100, by time).
- ``devices``: one record per (process, GPU) with measured kernels: ``pid``, ``device_id``,
  ``kernels_per_pass``, ``kernel_ms_per_pass``, ``busy_ms_per_pass``, ``by_category_ms_per_pass``,
  ``top_kernel`` (per measured step, as in ``overall``).
- ``efficiency``: ``precision``, ``peak_gpu``, ``peak_tflop_per_s``, ``peak_source``,
  ``precision_source``, ``flops_source``, ``gemm_precision_mix``, and when shown an ``answer``.
- ``questions``: one record per per-trace question of the registry (``a``..``e``, see
  :mod:`analysis.trace.question_figures`), each with its figures, and when shown an ``answer``
  sentence (:mod:`analysis.questions.nsys_a` .. ``nsys_e``); a figure a trace cannot give is null
  and the answer says why.
- ``memory_ledger``: mem-f's record (:func:`analysis.trace.memory_ledger.ledger_record`); ``gpu_metrics``: SM,
  tensor-pipe and DRAM throughput per phase where the trace has GPU metrics
  (:mod:`analysis.trace.gpu_metrics`).
- ``timeline``: the first measured step's operations and phase ranges for the report's timeline
  (:mod:`analysis.trace.step_timeline`), null without measured operations.
- ``communication``: per-rank figures (a rank is a process and its GPU), NCCL collectives,
  FSDP blocks, skew between ranks and a timeline of one step per rank
  (:func:`analysis.trace.multi_gpu.summary.communication_summary`; docs/architecture.md).
"""
from __future__ import annotations

import math
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from analysis import __version__
from analysis.core.phases import LabelledOps, label_ops
from analysis.core.range_names import RangeNames
from analysis.core.timings import read_run_record
from analysis.load import Trace, file_sha256
from analysis.load.progress import stage
from analysis.trace import efficiency
from analysis.trace.gpu_metrics import metrics_per_phase
from analysis.trace.memory_ledger import ledger_record
from analysis.trace.multi_gpu.communication import communication_kernels
from analysis.trace.multi_gpu.summary import COLUMNS as COMMUNICATION_COLUMNS
from analysis.trace.multi_gpu.summary import LAUNCH_ONLY, communication_summary, launches_read
from analysis.trace.nsys_inputs import OP_COLUMNS, NsysInputs
from analysis.trace.phase_breakdown import (
    between_steps_notes,
    device_summaries,
    overall_summary,
    phase_summaries,
    shape_summaries,
    unphased_notes,
)
from analysis.trace.section import Section, SummarySources
from analysis.trace.step_timeline import step_timeline
from analysis.trace.summary_schema import SCHEMA_VERSION, TraceSummary

SUMMARY_KEYS = tuple(typing.get_type_hints(TraceSummary))  # the keys of a summary, in their order
# The columns of the labelled ops the sections read (those of NsysInputs and of the communication figures).
READ_COLUMNS = frozenset(OP_COLUMNS) | frozenset(COMMUNICATION_COLUMNS)


def ops_read(ranges: pd.DataFrame, *tables: pd.DataFrame) -> tuple[frozenset[str], Callable[[pd.DataFrame], np.ndarray] | None]:
    """What the sections read of the ops made of ``tables`` (the ops, or the kernel and memop
    tables they are made of) in a trace of these ``ranges``: the columns of every op,
    :data:`READ_COLUMNS` less the launch columns unless the communication figures read every
    op's; and, where they read those of the communication kernels alone, the function that finds
    those rows, for :func:`~analysis.core.phases.label_ops`' ``launch_rows`` (:func:`launches_read`).
    The labelling drops the launch columns left out once it has read them last."""
    read = launches_read(ranges, *tables)
    columns = READ_COLUMNS if read == "every" else READ_COLUMNS - frozenset(LAUNCH_ONLY)
    return columns, communication_kernels if read == "communication" else None


class PerTraceQuestion(Protocol):
    """A question answered per trace (the registry's ``PER_TRACE``): its key in the summary's
    ``questions`` and the computation of its figures (:mod:`analysis.trace.question_figures`)."""

    summary_key: str

    def per_trace(self, inputs: NsysInputs, phases: dict[str, dict]) -> dict: ...


def sections(questions: Sequence[PerTraceQuestion]) -> tuple[Section, ...]:
    """Every section of the summary, in the order they are built; ``questions``: the per-trace
    questions whose records fill ``questions``."""
    return (
        # First, before the questions' tables exist: at millions of kernels the peak memory is the
        # largest of the stages, and the communication figures copy the kernel rows they read.
        Section("communication", lambda s: communication_summary(s.trace, s.labelled)),
        # The sections below read ``sources.inputs``, built by the first of them.
        Section("efficiency", lambda s: efficiency.efficiency_record(s.inputs)),
        Section("phases", phases_section),
        Section("phase_shapes", lambda s: shape_summaries(s.inputs)),
        Section("overall", lambda s: overall_summary(s.inputs)),
        Section("devices", lambda s: device_summaries(s.inputs)),
        Section("questions", lambda s, phases: {q.summary_key: q.per_trace(s.inputs, phases) for q in questions},
                needs=("phases",)),
        Section("timeline", lambda s: step_timeline(s.inputs)),
        # The optional tables' readers note the rows they leave out in the trace's notes: before ``notes``.
        Section("memory_ledger", lambda s: ledger_record(s.trace, s.run.config, s.labelled.structure)),
        Section("gpu_metrics", lambda s: metrics_per_phase(s.trace.optional_table("gpu_metrics"), s.labelled.phase_ranges,
                                                           s.labelled.ops, s.trace.cuda_devices)),
        Section("notes", lambda s: [*s.trace.notes, *s.labelled.notes, *s.run.notes, *unphased_notes(s.inputs),
                                    *between_steps_notes(s.inputs)]),
        Section("schema_version", lambda s: SCHEMA_VERSION),
        Section("trace", lambda s: Path(s.trace.path).name),
        Section("trace_sha256", lambda s: file_sha256(Path(s.trace.path))),
        Section("gpu", lambda s: s.gpu),
        Section("nsys_version", lambda s: s.trace.nsys_version),
        Section("analyzer_version", lambda s: __version__),
        Section("cuda_graph_launches", lambda s: s.trace.cuda_graph_launches),
        Section("config", lambda s: s.run.config),
        Section("config_source", lambda s: s.run.config_source),
        Section("python_ms_per_pass", lambda s: s.run.python_ms),
        Section("python_ms_source", lambda s: s.run.python_ms_source),
        Section("structure", lambda s: s.labelled.structure.record()),
        Section("has_steps", lambda s: s.labelled.has_steps),
        Section("measured_passes", measured_passes),
        Section("measured_passes_by_phase", lambda s: s.labelled.measured_passes),
    )


def summarize(trace: Trace, questions: Sequence[PerTraceQuestion], labelled: LabelledOps | None = None,
              names: RangeNames = RangeNames()) -> dict:
    """The stored summary of a loaded trace (see the module docstring for its keys): each of
    :func:`sections` built in turn. ``questions``: the per-trace questions whose records fill
    ``questions`` (the registry's ``PER_TRACE``, which :func:`analysis.app.analyze.analyze_trace`
    passes); ``labelled`` is ``label_ops(trace, names, ...)`` with what :func:`ops_read` gives when the caller
    has it already (it carries its own names). ``labelled.ops`` keeps only the columns the sections
    read (those of :class:`NsysInputs` and of the communication figures; the labelling has let go
    of the launch columns unless the communication figures read every op's: :func:`ops_read`),
    then, once the communication figures are done, only those of :class:`NsysInputs`: at millions
    of kernels every column dropped is memory the sections' own tables can use."""
    if labelled is None:
        columns, launch_rows = ops_read(trace.ranges, trace.kernels, trace.memops)
        labelled = label_ops(trace, names, columns=columns, launch_rows=launch_rows)
    labelled.ops = labelled.ops[[column for column in labelled.ops.columns if column in READ_COLUMNS]]
    run = read_run_record(trace.marks, trace.path, labelled.structure.step_ranges)
    sources = SummarySources(trace, labelled, run, trace.gpu_name or (run.config or {}).get("gpu_name"))
    stage(f"{Path(trace.path).name}: summarizing")
    built = {}
    for section in sections(questions):
        built[section.key] = section.build(sources, *(built[key] for key in section.needs))
    return json_ready({key: built[key] for key in SUMMARY_KEYS})


def phases_section(sources: SummarySources) -> dict[str, dict]:
    """The ``phases`` section: each phase's figures (:func:`phase_summaries`) with its GPU usage
    (:func:`analysis.trace.efficiency.phase_usage`)."""
    usage = efficiency.trace_usage(sources.inputs)
    return {phase: figures | efficiency.phase_usage(figures, phase, usage)
            for phase, figures in phase_summaries(sources.inputs).items()}


def measured_passes(sources: SummarySources) -> int:
    """Measured steps; without step ranges, the measured instances of the most frequent phase (0
    without phase ranges either)."""
    if sources.labelled.has_steps:
        return sources.inputs.measured_steps
    return max(sources.labelled.measured_passes.values(), default=0)


_JSON_SCALARS = frozenset({str, int, bool, type(None)})  # exact types that are JSON-ready as they are


def json_ready(value):
    """``value`` with numpy/pandas scalars made Python ones and NaN/inf made None, recursively."""
    if type(value) in _JSON_SCALARS:
        return value
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def flat_tables(summaries: list[dict]) -> dict[str, pd.DataFrame]:
    """Flat tables over many summaries, for CSV: ``phases`` (one row per trace and phase),
    ``categories`` (trace, phase or ``overall``, category, ms_per_pass) and ``questions`` (one
    row per trace, a column ``<question>_<key>`` per scalar figure and answer)."""
    phase_rows, category_rows, question_rows = [], [], []
    for summary in summaries:
        trace = summary["trace"]
        for phase, figures in summary["phases"].items():
            scalars = {k: v for k, v in figures.items() if not isinstance(v, (dict, list))}
            phase_rows.append({"trace": trace, "phase": phase, **scalars})
        sections = {**summary["phases"], "overall": summary["overall"]}
        for phase, figures in sections.items():
            category_rows += [
                {"trace": trace, "phase": phase, "category": category, "ms_per_pass": ms}
                for category, ms in figures["by_category_ms_per_pass"].items()
            ]
        question_rows.append(
            {"trace": trace}
            | {
                f"{question}_{key}": value
                for question, figures in summary["questions"].items()
                for key, value in figures.items()
                if not isinstance(value, (dict, list))
            }
        )
    return {
        "phases": pd.DataFrame(phase_rows, columns=["trace", "phase"] if not phase_rows else None),
        "categories": pd.DataFrame(category_rows, columns=["trace", "phase", "category", "ms_per_pass"]),
        "questions": pd.DataFrame(question_rows),
    }
