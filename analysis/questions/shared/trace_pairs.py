"""Two traces of one configuration that differ in one setting (fp32 against bf16, eager against
compiled), side by side: what one phase launches and how long its kernels run, per pass.

:func:`phase_pairs` reads the summaries' per-phase figures only (kernels, kernel time, GEMM and
cast time, GPU idle share), so results-file answers can explain a timing with the traces of the
same configuration.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from analysis.questions.shared import story
from analysis.questions.shared.results_files import sorted_by_size

if TYPE_CHECKING:
    import pandas as pd

KEYS = ["size", "context_length", "mode"]


def phase_pairs(summaries: list[dict], side: Callable[[dict], str | None], sides: tuple[str, str],
                phase: str = "forward") -> pd.DataFrame:
    """One row per configuration traced on both ``sides`` (``side(config)`` names a trace's side,
    None leaves it out): per side the phase's kernels per pass, kernel, GEMM and copy/cast ms per
    pass and GPU idle share (suffix ``_<side>``), ``added_kernels_per_pass`` (second − first) and
    ``kernel_time_cut`` (first / second)."""
    import pandas as pd

    rows = []
    for summary in summaries:
        config, figures = summary.get("config") or {}, (summary.get("phases") or {}).get(phase)
        label = side(config) if figures and set(KEYS) <= set(config) else None
        if label not in sides:
            continue
        categories = figures.get("by_category_ms_per_pass") or {}
        rows.append({**{key: config[key] for key in KEYS}, "side": label,
                     "kernels_per_pass": figures["kernels_per_pass"], "kernel_ms": figures["kernel_ms_per_pass"],
                     "gemm_ms": categories.get("gemm", 0.0), "copy_cast_ms": categories.get("copy_cast", 0.0),
                     "idle_share": story.idle_share(summary, phase)})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    first, second = sides
    pairs = frame[frame["side"] == first].drop(columns="side").merge(
        frame[frame["side"] == second].drop(columns="side"), on=KEYS, suffixes=(f"_{first}", f"_{second}"))
    if pairs.empty:
        return pairs
    pairs["added_kernels_per_pass"] = pairs[f"kernels_per_pass_{second}"] - pairs[f"kernels_per_pass_{first}"]
    pairs["kernel_time_cut"] = pairs[f"kernel_ms_{first}"] / pairs[f"kernel_ms_{second}"]
    return sorted_by_size(pairs, "context_length", "mode")
