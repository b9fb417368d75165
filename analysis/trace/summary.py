"""``summarize(trace, questions)``: one loaded trace in, its summary out (a JSON-ready dict, the
TraceSummary); :func:`analysis.app.analyze.analyze_trace` is the same from a path.

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
- ``overall``: every measured kernel per measured step (``scope`` says "measured steps" or
  "whole capture"): ``passes``, ``kernels_per_pass``, ``kernel_ms_per_pass``,
  ``distinct_kernels``, ``tensor_core_share``, ``by_category_ms_per_pass``, ``top_kernels``
  (100, by time).
- ``devices``: one record per (process, GPU) with measured kernels: ``pid``, ``device_id``,
  ``kernels_per_pass``, ``kernel_ms_per_pass``, ``busy_ms_per_pass``, ``by_category_ms_per_pass``,
  ``top_kernel`` (per measured step, as in ``overall``).
- ``efficiency``: ``precision``, ``peak_gpu``, ``peak_tflop_per_s``, ``peak_source``,
  ``precision_source``, ``gemm_precision_mix``, ``answer``.
- ``questions``: one record per per-trace question of the registry (``a``..``e``, see
  :mod:`analysis.questions.nsys_a` .. ``nsys_e``), each with its figures and an ``answer``
  sentence; a figure a trace cannot give is null and the answer says why.
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
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from analysis import __version__
from analysis.core.phases import LabelledOps, RangeNames, label_ops
from analysis.core.timings import read_run_record
from analysis.load import Trace, file_sha256
from analysis.trace import efficiency
from analysis.trace.gpu_metrics import metrics_per_phase
from analysis.trace.memory_ledger import ledger_record
from analysis.trace.multi_gpu.summary import communication_summary
from analysis.trace.nsys_inputs import NsysInputs
from analysis.trace.phase_breakdown import device_summaries, overall_summary, phase_summaries, shape_summaries
from analysis.trace.step_timeline import step_timeline
from analysis.trace.summary_schema import SCHEMA_VERSION


class PerTraceQuestion(Protocol):
    """A question answered per trace (the registry's ``PER_TRACE``): its key in the summary's
    ``questions`` and its computation on one trace's inputs."""

    summary_key: str

    def per_trace(self, inputs: NsysInputs) -> dict: ...


def summarize(trace: Trace, questions: Sequence[PerTraceQuestion], labelled: LabelledOps | None = None,
              names: RangeNames = RangeNames()) -> dict:
    """The summary of a loaded trace (see the module docstring for its keys); ``questions``: the
    per-trace questions whose records fill ``questions`` (the registry's ``PER_TRACE``, which
    :func:`analysis.app.analyze.analyze_trace` passes); ``labelled`` is ``label_ops(trace, names)``
    when the caller has it already (it carries its own names). Once the communication figures are
    done, ``labelled.ops`` keeps only the questions' columns."""
    labelled = labelled if labelled is not None else label_ops(trace, names)
    run = read_run_record(trace.marks, trace.path, labelled.structure.step_ranges)
    gpu = trace.gpu_name or (run.config or {}).get("gpu_name")
    # Before the questions' tables exist: at millions of kernels the peak memory is the largest
    # of the stages, and the communication figures copy the kernel rows they read.
    communication = communication_summary(trace, labelled)
    inputs = NsysInputs.build(labelled, run, gpu, trace.gemm_ops)
    # Nothing reads the other columns (launch calls, correlation ids, bytes) any more: at millions
    # of kernels they would stay beside the questions' tables.
    labelled.ops = inputs.ops
    inputs.phases.update(phase_summaries(inputs))  # in place: the totals it computed stay shared with the questions
    usage = efficiency.per_trace(inputs)
    phases = inputs.phases
    for phase, figures in usage.pop("phases").items():
        phases[phase].update(figures)
    passes = labelled.measured_passes
    # Before the notes are copied: the optional tables' readers note the rows they leave out.
    ledger = ledger_record(trace, run.config, labelled.structure)
    metrics = metrics_per_phase(trace.optional_table("gpu_metrics"), labelled.phase_ranges)
    summary = {
        "schema_version": SCHEMA_VERSION,
        "trace": Path(trace.path).name,
        "trace_sha256": file_sha256(Path(trace.path)),
        "gpu": gpu,
        "nsys_version": trace.nsys_version,
        "analyzer_version": __version__,
        "notes": [*trace.notes, *labelled.notes, *run.notes],
        "cuda_graph_launches": trace.cuda_graph_launches,
        "config": run.config,
        "config_source": run.config_source,
        "python_ms_per_pass": run.python_ms,
        "python_ms_source": run.python_ms_source,
        "structure": labelled.structure.record(),
        "has_steps": labelled.has_steps,
        "measured_passes": inputs.measured_steps if labelled.has_steps else max(passes.values(), default=0),
        "measured_passes_by_phase": passes,
        "phases": phases,
        "phase_shapes": shape_summaries(inputs),
        "overall": overall_summary(inputs),
        "devices": device_summaries(inputs),
        "efficiency": usage,
        "questions": {question.summary_key: _with_shape_note(question.per_trace(inputs), inputs)
                      for question in questions},
        "timeline": step_timeline(inputs),
        "communication": communication,
        "memory_ledger": ledger,
        "gpu_metrics": metrics,
    }
    return json_ready(summary)


def _with_shape_note(record: dict, inputs: NsysInputs) -> dict:
    """A per-trace answer with the warning that its forward ranges run different shapes, if they do."""
    note = inputs.mixed_shapes_note("forward")
    return record | {"answer": record["answer"] + note} if note else record


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
