"""What the per-trace sentences say of a trace's ranges, read from its summary: the name of a
phase's ranges, its measured passes, why it has no kernels, and the warning for a phase whose
ranges run different shapes."""
from __future__ import annotations


def range_name(summary: dict, phase: str) -> str:
    """The name of the trace's ranges of ``phase`` (its first family), else the phase's own name."""
    names = summary["structure"]["phase_names"].get(phase)
    return names[0] if names else phase


def passes(summary: dict, phase: str) -> int:
    """Number of measured instances of a phase (0 when the trace has none)."""
    return int(summary["measured_passes_by_phase"].get(phase, 0))


def no_kernels_reason(summary: dict, phase: str) -> str:
    """Why a phase has no measured kernels to analyze, as the start of an answer sentence."""
    if passes(summary, phase) == 0:
        return f"This trace has no measured `{range_name(summary, phase)}` range"
    return f"This trace launched no kernels inside its measured `{range_name(summary, phase)}` ranges"


def mixed_shapes_note(summary: dict, phase: str) -> str:
    """A sentence for answers whose per-pass figures would average ranges of different shapes
    (the phase's shape groups in ``phase_shapes``), else ``""``."""
    count = len((summary.get("phase_shapes") or {}).get(phase) or [])
    if not count:
        return ""
    return (f" Its {passes(summary, phase)} `{range_name(summary, phase)}` ranges run {count} different "
            "shapes (their enclosing ranges differ), so a per-pass mean averages different work; the "
            "summary's `phase_shapes` gives them per shape, and this trace stays out of the answers across traces.")
