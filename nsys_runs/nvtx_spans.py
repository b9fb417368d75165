"""The CPU span of each phase range of the measured steps, for the sweep table (`nsys_forward_ms`).

The figures come from the analyzer's own rule (:func:`analysis.core.phases.label_ops`: a phase range is
measured when it starts inside a `step_<i>` range of its process), so the sweep table's forward
span is the `cpu_span_ms_per_pass` that `analyze-nsys` reports for the same trace; the report's
run grids show it for configurations whose trace is not among the report's inputs.
"""
from __future__ import annotations

from pathlib import Path

from analysis.core.phases import label_ops
from analysis.load import load_trace
from analysis.load.errors import TraceError


def measured_phase_spans_ms(export: str | Path) -> dict[str, float]:
    """Mean CPU span in ms of each phase's measured ranges (phase -> ms).

    Returns {} when the export has no measured phase ranges or the analyzer refuses it.
    """
    try:
        ranges = label_ops(load_trace(export)).phase_ranges
    except TraceError:
        return {}
    measured = ranges[ranges["measured"]]
    return (measured.groupby("phase")["cpu_dur_ns"].mean() / 1e6).to_dict()
