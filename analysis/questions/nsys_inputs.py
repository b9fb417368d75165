"""What the nsys questions read, built once per trace, and the per-kernel totals they share.

Every per-trace computation takes an :class:`NsysInputs` (one signature); none reloads or
relabels the trace.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd

from analysis.classify import classify_kernels
from analysis.phases import LabelledOps, RangeNames
from analysis.timings import RunRecord
# The columns of the labelled ops the questions read (a slim copy keeps the filters cheap).
OP_COLUMNS = ("start_ns", "end_ns", "dur_ns", "pid", "device_id", "stream_id", "op_kind", "demangled_name", "step",
              "measured", "phase", "phase_range_id", "region")


@dataclass(frozen=True)
class NsysInputs:
    """Labelled GPU operations of one trace with their kernel categories, and the run record.

    ``ops`` holds the :data:`OP_COLUMNS` of ``LabelledOps.ops`` plus ``category`` and
    ``tensor_core`` (memcpy/memset rows get their ``op_kind`` as category, and False).
    """

    ops: pd.DataFrame
    phase_ranges: pd.DataFrame
    measured_passes: dict[str, int]
    measured_steps: int  # step ranges measured; 1 when the trace has none (whole capture)
    has_steps: bool
    run: RunRecord
    gpu_name: str | None
    names: RangeNames  # the NVTX range names the ops were labelled with
    phases: dict = field(default_factory=dict)  # the summary's per-phase figures, once computed

    @classmethod
    def build(cls, labelled: LabelledOps, run: RunRecord, gpu_name: str | None) -> NsysInputs:
        """Add kernel categories to the labelled ops."""
        ops = labelled.ops[list(OP_COLUMNS)]
        is_kernel = ops["op_kind"] == "kernel"
        classes = classify_kernels(ops["demangled_name"])
        ops = ops.assign(
            category=classes["category"].where(is_kernel, ops["op_kind"]).astype("category"),
            tensor_core=classes["tensor_core"] & is_kernel,
        )
        if labelled.has_steps:
            measured_steps = int(ops.loc[ops["measured"], "step"].nunique())
        else:
            measured_steps = 1
        return cls(
            ops=ops,
            phase_ranges=labelled.phase_ranges,
            measured_passes=dict(labelled.measured_passes),
            measured_steps=measured_steps,
            has_steps=labelled.has_steps,
            run=run,
            gpu_name=gpu_name,
            names=labelled.names,
        )

    @cached_property
    def _measured_kernels(self) -> pd.DataFrame:
        return self.ops[self.ops["measured"] & (self.ops["op_kind"] == "kernel")]

    def measured_kernels(self, phases: tuple[str, ...] | None = None) -> pd.DataFrame:
        """Kernel rows of measured steps, in the given phases (all, when ``phases`` is None)."""
        kernels = self._measured_kernels
        return kernels if phases is None else kernels[kernels["phase"].isin(phases)]

    def no_kernels_reason(self, phase: str) -> str:
        """Why a phase has no measured kernels to analyze, as the start of an answer sentence."""
        range_name = self.names.phase_range(phase)
        if self.passes(phase) == 0:
            return f"This trace has no measured `{range_name}` range"
        return f"This trace launched no kernels inside its measured `{range_name}` ranges"

    def passes(self, phase: str) -> int:
        """Number of measured instances of a phase (0 when the trace has none)."""
        return int(self.measured_passes.get(phase, 0))


def kernel_totals(kernels: pd.DataFrame, passes: int) -> pd.DataFrame:
    """One row per kernel (demangled name), most summed time first.

    Columns: ``kernel``, ``category``, ``tensor_core``, ``calls``, ``total_ns``,
    ``calls_per_pass``, ``ms_per_pass`` (divided by ``passes``) and ``share`` (of the summed
    time of ``kernels``).
    """
    totals = (
        kernels.groupby("demangled_name", sort=False, observed=True)
        .agg(
            category=("category", "first"),
            tensor_core=("tensor_core", "first"),
            calls=("dur_ns", "size"),
            total_ns=("dur_ns", "sum"),
        )
        .rename_axis("kernel")
        .reset_index()
        .astype({"kernel": str})
        .sort_values(["total_ns", "kernel"], ascending=[False, True], ignore_index=True)
    )
    divisor = max(passes, 1)
    all_ns = totals["total_ns"].sum()
    return totals.assign(
        calls_per_pass=totals["calls"] / divisor,
        ms_per_pass=totals["total_ns"] / divisor / 1e6,
        share=totals["total_ns"] / all_ns if all_ns else 0.0,
    )


def category_ms(kernels: pd.DataFrame, passes: int) -> pd.Series:
    """Summed time per category in ms per pass, largest first."""
    per_category = kernels.groupby("category", sort=False)["dur_ns"].sum() / max(passes, 1) / 1e6
    return per_category.sort_values(ascending=False)
