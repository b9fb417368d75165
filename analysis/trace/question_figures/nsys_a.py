"""The figures of nsys_profile (a) for one trace: the forward pass's time as nsys sees it (the
mean CPU span of the measured ``forward`` ranges, and their GPU projection) against the Python
timer of the same steps. Null where the trace has no measured ``forward`` range, or where its
``forward`` ranges run different shapes (no single forward pass)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from analysis.trace.summary_schema import WRITTEN

if TYPE_CHECKING:
    from analysis.trace.nsys_inputs import NsysInputs


class Record(TypedDict):
    """The per-trace record of (a), in the summary's ``questions["a"]``."""

    nsys_forward_ms: float | None
    nsys_forward_gpu_ms: float | None
    python_forward_ms: float | None
    nsys_to_python_ratio: float | None
    answer: Annotated[str, WRITTEN]


def figures(inputs: NsysInputs, phases: dict[str, dict]) -> dict:
    """(a)'s record for one trace (less its sentence), from its ``forward`` figures in ``phases``
    and the Python timings."""
    forward = phases.get("forward")
    python_forward_ms = inputs.run.python_ms.get("forward")
    if forward is None or inputs.mixed_shapes("forward"):
        return {"nsys_forward_ms": None, "nsys_forward_gpu_ms": None, "python_forward_ms": python_forward_ms,
                "nsys_to_python_ratio": None}
    nsys_ms = forward["cpu_span_ms_per_pass"]
    return {
        "nsys_forward_ms": nsys_ms,
        "nsys_forward_gpu_ms": forward["gpu_span_ms_per_pass"],
        "python_forward_ms": python_forward_ms,
        "nsys_to_python_ratio": nsys_ms / python_forward_ms if python_forward_ms is not None else None,
    }
