"""What the per-trace sentences say of a trace's ranges, read from its summary: the name of a
phase's ranges, its measured passes, why it has no kernels, and the warnings for a phase whose
ranges run different shapes or whose kernels ran inside CUDA graphs traced whole."""
from __future__ import annotations

from analysis.core import text
from analysis.core.classify import CUDA_GRAPH


def range_names(summary: dict, phase: str) -> str:
    """The names of the trace's ranges of ``phase``, each in backticks and joined by ``/`` where
    several names are the phase (one per model of a step that trains two), else the phase's own name."""
    names = summary["structure"]["phase_names"].get(phase) or [phase]
    return "/".join(f"`{name}`" for name in names)


def passes(summary: dict, phase: str) -> int:
    """Number of measured instances of a phase (0 when the trace has none)."""
    return int(summary["measured_passes_by_phase"].get(phase, 0))


def no_kernels_reason(summary: dict, phase: str) -> str:
    """Why a phase has no measured kernels to analyze, as the start of an answer sentence."""
    if passes(summary, phase) == 0:
        return f"This trace has no measured {range_names(summary, phase)} range"
    return f"This trace launched no kernels inside its measured {range_names(summary, phase)} ranges"


def mixed_shapes_note(summary: dict, phase: str) -> str:
    """A sentence for answers whose per-pass figures would average ranges of different shapes
    (the phase's shape groups in ``phase_shapes``), else ``""``."""
    count = len((summary.get("phase_shapes") or {}).get(phase) or [])
    if not count:
        return ""
    return (f" Its {passes(summary, phase)} {range_names(summary, phase)} ranges run {count} different "
            "shapes (their enclosing ranges differ), so a per-pass mean averages different work; the "
            "summary's `phase_shapes` gives them per shape, and this trace stays out of the answers across traces.")


def whole_graphs_shares(summary: dict) -> tuple[float, float]:
    """The shares of the forward's kernel time and of the measured steps' that ran inside CUDA
    graphs traced whole (category ``cuda_graph``: one record per graph, its kernels not listed)."""
    def graph_share(figures: dict) -> float:
        total = figures.get("kernel_ms_per_pass") or 0.0
        return (figures.get("by_category_ms_per_pass") or {}).get(CUDA_GRAPH, 0.0) / total if total else 0.0

    return graph_share((summary.get("phases") or {}).get("forward") or {}), graph_share(summary.get("overall") or {})


def whole_graphs_note(summary: dict) -> str:
    """A sentence for answers that tell kernels apart, where part of the forward's kernel time (or
    of the measured steps') ran inside CUDA graphs traced whole (:func:`whole_graphs_shares`), else ``""``."""
    forward, step = whole_graphs_shares(summary)
    if not forward and not step:
        return ""
    held = f"{text.pct(forward)} of forward kernel time and {text.pct(step)} of the measured steps'" if forward \
        else f"{text.pct(step)} of the measured steps' kernel time"
    return (f" CUDA graphs traced whole (`[CUDA graph <id>]`, nsys's --cuda-graph-trace=graph) hold {held}: the "
            "trace does not list their kernels, so none of them counts as a matrix multiplication or as any other "
            "kind here; profile with --cuda-graph-trace=node to see them.")
